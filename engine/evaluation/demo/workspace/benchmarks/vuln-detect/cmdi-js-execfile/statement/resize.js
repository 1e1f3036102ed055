const { execFile } = require("child_process");

function resize(req, res) {
  execFile("convert", [req.body.file, "-resize", "64x64", "thumb.png"], (err) => {
    if (err) return res.status(500).send("failed");
    res.send("ok");
  });
}

module.exports = { resize };
