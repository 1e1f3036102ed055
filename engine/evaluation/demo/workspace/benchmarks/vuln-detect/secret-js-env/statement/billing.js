const password = process.env.BILLING_PASSWORD;
const user = process.env.BILLING_USER;
module.exports = { auth: { user, password } };
