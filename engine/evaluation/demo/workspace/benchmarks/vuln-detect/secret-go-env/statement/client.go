package client

import "os"

func Token() string {
	return os.Getenv("API_TOKEN")
}
