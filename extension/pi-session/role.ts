// Which session this is: the process's main session or an SDK child
// bound in the same process, and whether it is a subagent or headless.
// Pure functions over a process-wide slot; no pi imports.

// The slot is process-wide (globalThis), not module-wide: pi may load the
// extension once per session runtime in the same Node process.
// The key keeps its first name, so copies of the extension of any version
// loaded in one process share the slot.
const MAIN = Symbol.for("pi-session.primary");

type Slot = { [MAIN]?: object };

// claimRole makes the caller (identified by token) the main session if no
// main session is bound in this process, and says which role it has. A
// session that starts while a main one is bound is an SDK child.
export function claimRole(token: object, g: Slot = globalThis as Slot): "main" | "child" {
	if (g[MAIN] === undefined) g[MAIN] = token;
	return g[MAIN] === token ? "main" : "child";
}

// releaseRole frees the main slot at the main session's shutdown, so that
// the session pi switches to next (new, resume, fork) is main again.
export function releaseRole(token: object, g: Slot = globalThis as Slot): void {
	if (g[MAIN] === token) delete g[MAIN];
}

// isSubagentName: pi-subagents names its sessions "<name>#<8 hex digits>".
export function isSubagentName(name: string | undefined): boolean {
	return name !== undefined && /#[0-9a-fA-F]{8}$/.test(name);
}

// isHeadless: one-shot modes without a UI. tui and rpc count as main
// sessions, since RPC provides a UI context.
export function isHeadless(mode: string | undefined): boolean {
	return mode === "print" || mode === "json";
}
