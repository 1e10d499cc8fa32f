// Package e2e holds pi-session's end-to-end tests: real pi 1.6 under the real pi-session binary, offline, with a scripted model.
package e2e
