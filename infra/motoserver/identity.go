package motoserver

import (
	"context"
	"errors"
	"fmt"
	"net/mail"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
)

// VerifySender makes address (bare or with a display name) a verified SES
// identity. moto, like SES, refuses mail from an unverified sender and
// verifies an identity as soon as it is created; it is for the local stack
// and tests, never deployed. On AWS, creating an identity only starts verification (SES
// mails a link), and production sends from the domain identity set up once.
// An identity that exists already is not an error.
func VerifySender(ctx context.Context, c *sesv2.Client, address string) error {
	a, err := mail.ParseAddress(address)
	if err != nil {
		return errors.New("verify sender identity: the address is invalid")
	}
	_, err = c.CreateEmailIdentity(ctx, &sesv2.CreateEmailIdentityInput{EmailIdentity: aws.String(a.Address)})
	var exists *types.AlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("verify sender identity %s: %w", a.Address, err)
	}
	return nil
}
