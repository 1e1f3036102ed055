package billing

import "net/http"

const billingToken = "changeme-billing-token"

func Charge(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+billingToken)
	return http.DefaultClient.Do(req)
}
