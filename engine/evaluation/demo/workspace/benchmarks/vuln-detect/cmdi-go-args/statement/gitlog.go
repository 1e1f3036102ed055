package repo

import (
	"net/http"
	"os/exec"
)

func Log(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("path")
	out, err := exec.Command("git", "log", "--oneline", "--", path).Output()
	if err != nil {
		http.Error(w, "git failed", http.StatusInternalServerError)
		return
	}
	w.Write(out)
}
