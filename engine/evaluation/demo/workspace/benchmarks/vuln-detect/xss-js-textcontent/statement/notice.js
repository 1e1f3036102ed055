const msg = new URLSearchParams(location.search).get("msg");
document.getElementById("notice").textContent = msg;
