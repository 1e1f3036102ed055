const RATES_URL = "https://api.example.com/v1/rates";

async function latestRates() {
  const resp = await fetch(RATES_URL);
  return resp.json();
}

module.exports = { latestRates };
