function restoreState(req, res) {
  const state = JSON.parse(Buffer.from(req.body.state, "base64").toString());
  res.json({ items: Array.isArray(state.items) ? state.items.length : 0 });
}

module.exports = { restoreState };
