package backup

import (
	"net/http"
	"os/exec"
)

func Archive(w http.ResponseWriter, r *http.Request) {
	dir := r.FormValue("dir")
	cmd := exec.Command("sh", "-c", "tar czf /tmp/backup.tgz "+dir)
	if err := cmd.Run(); err != nil {
		http.Error(w, "backup failed", http.StatusInternalServerError)
		return
	}
	w.Write([]byte("done"))
}
