const crypto = require("crypto");

function sealToken(userId, key) {
  const cipher = crypto.createCipheriv("des-cbc", key, Buffer.alloc(8));
  return cipher.update(String(userId), "utf8", "base64") + cipher.final("base64");
}

module.exports = { sealToken };
