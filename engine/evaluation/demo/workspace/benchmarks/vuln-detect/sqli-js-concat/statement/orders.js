const express = require("express");
const db = require("./db");

const router = express.Router();

router.get("/orders", (req, res) => {
  const sql = "SELECT * FROM orders WHERE customer_id = " + req.query.customer;
  db.query(sql + " ORDER BY created_at DESC", (err, rows) => {
    if (err) return res.status(500).end();
    res.json(rows);
  });
});

module.exports = router;
