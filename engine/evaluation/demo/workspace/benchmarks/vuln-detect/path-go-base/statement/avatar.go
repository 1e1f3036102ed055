package avatar

import (
	"net/http"
	"path/filepath"
)

func Avatar(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("user")
	http.ServeFile(w, r, filepath.Join("/srv/avatars", filepath.Base(user)+".png"))
}
