package files

import (
	"net/http"
	"path/filepath"
)

const root = "/srv/static"

func Serve(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("f")
	http.ServeFile(w, r, filepath.Join(root, name))
}
