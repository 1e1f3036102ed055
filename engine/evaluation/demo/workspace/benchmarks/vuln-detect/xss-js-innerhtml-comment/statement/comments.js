async function showComment(id) {
  const resp = await fetch("/api/comments/" + encodeURIComponent(id));
  const comment = await resp.json();
  document.getElementById("comment").innerHTML = comment.body;
}

module.exports = { showComment };
