package notify

import (
	"net/http"
	"strings"
)

const webhookToken = "changeme-demo-token"

func Send(msg string) error {
	req, err := http.NewRequest("POST", "https://hooks.example.com/notify", strings.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+webhookToken)
	_, err = http.DefaultClient.Do(req)
	return err
}
