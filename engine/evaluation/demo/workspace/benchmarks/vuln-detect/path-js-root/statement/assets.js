const express = require("express");

const app = express();

app.get("/assets/:name", (req, res) => {
  res.sendFile(req.params.name, { root: __dirname + "/assets", dotfiles: "deny" });
});

module.exports = app;
