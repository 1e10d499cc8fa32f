// Package rules finds the standing rules in a user's messages, in any phrasing and language, with a small trained model.
package rules

//go:generate go run ./internal/train -set testdata/labelled -out model.bin
