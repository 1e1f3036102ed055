const crypto = require("crypto");

function checksum(buf) {
  return crypto.createHash("sha256").update(buf).digest("hex");
}

module.exports = { checksum };
