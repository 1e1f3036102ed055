const { exec } = require("child_process");

function makeThumbnail(req, res) {
  const file = req.body.file;
  exec("convert " + file + " -resize 64x64 thumb.png", (err) => {
    if (err) return res.status(500).send("failed");
    res.send("ok");
  });
}

module.exports = { makeThumbnail };
