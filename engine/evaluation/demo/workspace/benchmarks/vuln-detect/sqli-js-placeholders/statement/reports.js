const db = require("./db");

async function ordersByStatus(req, res) {
  const order = req.query.newest ? "created_at DESC" : "created_at";
  const rows = await db.query("SELECT id, total FROM orders WHERE status = ? ORDER BY " + order, [req.query.status]);
  res.json(rows);
}

module.exports = { ordersByStatus };
