package page

import (
	"html/template"
	"net/http"
)

var tpl = template.Must(template.New("p").Parse("<h1>Hello {{.}}</h1>"))

func Hello(w http.ResponseWriter, r *http.Request) {
	tpl.Execute(w, r.URL.Query().Get("name"))
}
