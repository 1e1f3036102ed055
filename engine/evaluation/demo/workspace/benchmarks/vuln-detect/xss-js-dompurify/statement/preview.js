import DOMPurify from "dompurify";

export function showPreview(html) {
  const el = document.getElementById("preview");
  el.innerHTML = DOMPurify.sanitize(html);
}
