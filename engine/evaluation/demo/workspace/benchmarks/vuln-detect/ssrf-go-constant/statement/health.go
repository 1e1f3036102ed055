package health

import "net/http"

const upstream = "https://status.example.com/health"

func Upstream() (int, error) {
	resp, err := http.Get(upstream)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}
