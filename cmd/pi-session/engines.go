package main

import (
	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/supervisor"
)

// engineSet is every engine the host serves, in one place for both hosts
// (the wrapper's and `pi-session serve`). Each engine's wiring lives in its
// own file (offload.go, ...); this file only lists them.
type engineSet struct {
	inv        *invocation
	relauncher *supervisor.Relauncher // nil under `pi-session serve`: no relaunch there
	offload    *offloadEngines
	budget     *budgetEngine
	relay      *relayHost
	pins       *pinsHost
}

// newEngineSet opens the engines for one host. relauncher is the
// wrapper's, or nil for serve.
func newEngineSet(inv *invocation, relauncher *supervisor.Relauncher) *engineSet {
	return &engineSet{inv: inv, relauncher: relauncher, offload: newOffloadEngines(), budget: newBudgetEngine(inv, relauncher), relay: newRelayHost(inv),
		pins: &pinsHost{relauncher: relauncher}}
}

// list is the engines to register, in order.
func (s *engineSet) list() []hooks.Engine {
	var es []hooks.Engine
	if s.relauncher != nil {
		es = append(es, s.relauncher.Engine())
	}
	es = append(es, recapEngine())
	return append(es, s.offload.engine(), s.budget.engine(), s.relay.engine(), s.pins.engine())
}

// closed tells the engines that a session's connection closed (clean:
// after its bye).
func (s *engineSet) closed(p *hooks.Peer, clean bool) {
	s.budget.closed(p, clean)
}

// close releases what the engines hold open.
func (s *engineSet) close() {
	s.offload.close()
	s.budget.close()
	s.relay.close()
}
