const crypto = require("crypto");
const store = require("./store");

function encryptNote(req, key) {
  const cipher = crypto.createCipheriv("des-ecb", key, null);
  const data = cipher.update(req.body.note, "utf8", "hex") + cipher.final("hex");
  return store.save(req.query.owner, data);
}

module.exports = { encryptNote };
