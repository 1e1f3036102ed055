package users

import (
	"database/sql"
	"fmt"
	"net/http"
)

func Lookup(db *sql.DB, w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	order := r.FormValue("order")
	q := fmt.Sprintf("SELECT id, email FROM users WHERE name = '%s' ORDER BY %s", name, order)
	row := db.QueryRow(q)
	var id int
	var email string
	if err := row.Scan(&id, &email); err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	fmt.Fprintf(w, "%d %s", id, email)
}
