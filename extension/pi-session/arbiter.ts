// The one place where the engines that share pi's events are ordered.
// Four engines live in one extension and see the same events, so no engine
// registers its own session_before_compact or input handler: each plugs in
// here, and this module decides, by one written rule, who acts.
//
// The rule:
//  - Compaction (session_before_compact): the engine that started a
//    compaction answers it. Claims are asked in COMPACTION_ORDER; the first
//    answer that is not undefined wins and no later engine is asked. An
//    engine answers only for compactions it owns (relay: its private marker
//    in customInstructions; budget: its own drafts, or its enforce-mode
//    backstop). With no answer, pi's own compaction runs.
//  - Input (input): every observer runs first (they never change the input:
//    recap's "the user is active", budget's config reload). Then holders are
//    asked in INPUT_ORDER; the first that does not answer {action:"continue"}
//    wins, and later holders are not asked: input is held by at most one
//    engine at a time.
//  - Exclusive work: a relay, a budget handoff and a recap never run at once
//    on one session. begin(who) takes the session's one slot (false when
//    another engine holds it); end(who) releases it.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { log } from "./sink.ts";

export type Engine = "relay" | "budget" | "recap" | "offload";
export type Work = "relay" | "handoff" | "recap";

export const COMPACTION_ORDER: readonly Engine[] = ["relay", "budget"];
export const INPUT_ORDER: readonly Engine[] = ["budget", "relay"];

// CompactionAnswer is what session_before_compact may return.
export type CompactionAnswer = { cancel: true } | { compaction: { summary: string; firstKeptEntryId: string | null; tokensBefore: number; details?: unknown } };
export type CompactionClaim = (event: any, ctx: ExtensionContext) => Promise<CompactionAnswer | undefined> | CompactionAnswer | undefined;

// InputAnswer is what an input handler may return.
export type InputAnswer = { action: "continue" } | { action: "transform"; text: string; images?: unknown[] } | { action: "handled" };
export type InputHolder = (event: any, ctx: ExtensionContext) => Promise<InputAnswer | undefined> | InputAnswer | undefined;
export type InputObserver = (event: any, ctx: ExtensionContext) => void | Promise<void>;

export class Arbiter {
	private compactions = new Map<Engine, CompactionClaim>();
	private holders = new Map<Engine, InputHolder>();
	private observers: { who: Engine; fn: InputObserver }[] = [];
	private slot: { who: Work; since: number } | undefined;

	// onCompaction lets an engine answer the compactions it owns.
	onCompaction(who: Engine, claim: CompactionClaim) {
		if (!COMPACTION_ORDER.includes(who)) throw new Error(`arbiter: ${who} is not in COMPACTION_ORDER`);
		this.compactions.set(who, claim);
	}

	// onInput adds an input holder for an engine (one per engine).
	onInput(who: Engine, hold: InputHolder) {
		if (!INPUT_ORDER.includes(who)) throw new Error(`arbiter: ${who} is not in INPUT_ORDER`);
		this.holders.set(who, hold);
	}

	// observeInput adds an observer that sees every input and changes nothing.
	observeInput(who: Engine, fn: InputObserver) {
		this.observers.push({ who, fn });
	}

	// compact is the extension's one session_before_compact handler. An
	// engine that throws is treated as not owning the compaction.
	async compact(event: any, ctx: ExtensionContext): Promise<CompactionAnswer | undefined> {
		for (const who of COMPACTION_ORDER) {
			const claim = this.compactions.get(who);
			if (!claim) continue;
			let answer: CompactionAnswer | undefined;
			try {
				answer = await claim(event, ctx);
			} catch (e) {
				log(`pi-session: ${who}: compaction: ${(e as Error).message}`);
				continue;
			}
			if (answer !== undefined) return answer;
		}
		return undefined;
	}

	// input is the extension's one input handler.
	async input(event: any, ctx: ExtensionContext): Promise<InputAnswer | undefined> {
		for (const o of this.observers) {
			try {
				await o.fn(event, ctx);
			} catch (e) {
				log(`pi-session: ${o.who}: input: ${(e as Error).message}`);
			}
		}
		for (const who of INPUT_ORDER) {
			const hold = this.holders.get(who);
			if (!hold) continue;
			let answer: InputAnswer | undefined;
			try {
				answer = await hold(event, ctx);
			} catch (e) {
				log(`pi-session: ${who}: input: ${(e as Error).message}`);
				continue;
			}
			if (answer && answer.action !== "continue") return answer;
		}
		return undefined;
	}

	// begin takes the session's one slot for exclusive work; false when
	// another engine's work holds it.
	begin(who: Work): boolean {
		if (this.slot) return false; // another engine's work, or this one already running
		this.slot = { who, since: Date.now() };
		return true;
	}

	// end releases the slot if who holds it.
	end(who: Work) {
		if (this.slot?.who === who) this.slot = undefined;
	}

	// busy says which work holds the slot, if any.
	busy(): Work | undefined {
		return this.slot?.who;
	}

	// reset releases everything (session_shutdown).
	reset() {
		this.slot = undefined;
	}
}
