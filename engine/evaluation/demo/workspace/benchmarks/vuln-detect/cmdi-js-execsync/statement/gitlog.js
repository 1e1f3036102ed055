const { execSync } = require("child_process");

function history(req, res) {
  const out = execSync("git log --oneline " + req.query.branch);
  res.type("text/plain").send(out);
}

module.exports = { history };
