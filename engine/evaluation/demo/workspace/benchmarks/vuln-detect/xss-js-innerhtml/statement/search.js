const params = new URLSearchParams(window.location.search);
const box = document.getElementById("results-title");
box.innerHTML = "Results for <b>" + params.get("q") + "</b>";
