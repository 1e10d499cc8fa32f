// Package offload keeps large tool results out of the model's context: it stores them exactly, by content, and reads them back by handle.
package offload
