// Command pi-session runs the pi coding agent under supervision and relaunches it from verified handoffs.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}
