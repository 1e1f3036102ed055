const fs = require("fs");

function showLog(req, res) {
  const text = fs.readFileSync("/var/log/app/" + req.query.name, "utf8");
  res.type("text/plain").send(text);
}

module.exports = { showLog };
