const ref = new URLSearchParams(location.search).get("ref");
document.write("<p>Welcome back from " + ref + "</p>");
