package passwords

import "golang.org/x/crypto/bcrypt"

func Hash(pw string) ([]byte, error) {
	return bcrypt.GenerateFromPassword([]byte(pw), 12)
}
