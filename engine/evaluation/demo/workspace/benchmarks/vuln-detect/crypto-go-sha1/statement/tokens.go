package tokens

import (
	"crypto/sha1"
	"encoding/hex"
)

func HashPassword(pw string) string {
	sum := sha1.Sum([]byte(pw))
	return hex.EncodeToString(sum[:])
}
