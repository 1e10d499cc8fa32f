// Which session this is: the process's primary session or an SDK child
// bound in the same process, and whether it is a subagent or headless.
// Pure functions over a process-wide slot; no pi imports.

// The slot is process-wide (globalThis), not module-wide: pi may load the
// extension once per session runtime in the same Node process.
const PRIMARY = Symbol.for("pi-session.primary");

type Slot = { [PRIMARY]?: object };

// claimRole makes the caller (identified by token) the primary session if
// no primary is bound in this process, and says which role it has. A
// session that starts while a primary is bound is an SDK child.
export function claimRole(token: object, g: Slot = globalThis as Slot): "primary" | "child" {
	if (g[PRIMARY] === undefined) g[PRIMARY] = token;
	return g[PRIMARY] === token ? "primary" : "child";
}

// releaseRole frees the primary slot at the primary's shutdown, so that the
// session pi switches to next (new, resume, fork) is primary again.
export function releaseRole(token: object, g: Slot = globalThis as Slot): void {
	if (g[PRIMARY] === token) delete g[PRIMARY];
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
