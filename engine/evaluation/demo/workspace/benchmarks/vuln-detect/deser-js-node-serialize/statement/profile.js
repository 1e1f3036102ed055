const serialize = require("node-serialize");

function loadProfile(req, res) {
  const profile = serialize.unserialize(Buffer.from(req.cookies.profile, "base64").toString());
  res.json({ name: profile.name });
}

module.exports = { loadProfile };
