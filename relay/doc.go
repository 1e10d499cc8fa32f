// Package relay replaces an LLM compaction with a deterministic handoff note and finds what left the context again (recall).
package relay
