const express = require("express");

const app = express();

app.get("/proxy", async (req, res) => {
  const upstream = await fetch(req.query.target);
  res.status(upstream.status).send(await upstream.text());
});

module.exports = app;
