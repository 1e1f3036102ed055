const Mailer = require("./mailer-client");

const apiKey = "demo-not-a-real-key";

function sendWelcome(user) {
  const client = new Mailer({ apiKey });
  return client.send({ to: user.email, template: "welcome" });
}

module.exports = { sendWelcome };
