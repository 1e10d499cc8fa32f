// The recap engine's side in pi: after a run settles and the session stays
// quiet, a "✦ Recap" card says what the run did and the next step, written
// by a cheap model of the user's choice. This module schedules it
// (recap-logic.ts), calls the model through ctx.modelRegistry, appends the
// card (a summary-recap entry, never in the model's context), draws it, and
// offers /recap. The text work is the Go engine's: recap.prepare selects
// the run from the session file and returns the redacted request and a
// local fallback; recap.verdict judges the model's answer.
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { getAgentDir, getMarkdownTheme, ThinkingSelectorComponent } from "@earendil-works/pi-coding-agent";
import { getSupportedThinkingLevels } from "@earendil-works/pi-ai/models";
import { Box, Markdown, Spacer, Text } from "@earendil-works/pi-tui";
import { Deadline, type Kit } from "./kit.ts";
import { echo, notify, status, visible } from "./sink.ts";
import {
	anyChildRunning,
	cheapestFirst,
	configPath,
	isRecapEntryData,
	readSummaryConfig,
	modelLabel,
	onActivity,
	RECAP_ENTRY,
	RecapController,
	reportActivity,
	saveSummaryConfig,
	STATUS_KEY,
	summarizeRun,
	toggleRecaps,
	type Prepared,
	type ReasoningLevel,
	type RecapEntryData,
	type SummaryConfig,
	type Verdict,
} from "./recap-logic.ts";

export function registerRecap(pi: ExtensionAPI, kit: Kit) {
	let ctx: ExtensionContext | undefined;
	const token = {}; // this session's entry in the child-activity registry
	let child = false;
	let unsubscribe: (() => void) | undefined;
	const file = () => configPath(getAgentDir());
	// What is wrong with the config (the engine's notice: the problems,
	// placed in the file, and what they mean) is said once a session per
	// cause.
	let told = "";
	const configProblem = (notice: string) => {
		if (notice === told) return;
		told = notice;
		try {
			notify(ctx, `Recap: ${notice}`, "warning");
		} catch {
			// a context of a session that ended
		}
	};
	const loadConfig = async () => {
		const l = await readSummaryConfig(kit.ask, file());
		if (l.notice) configProblem(l.notice);
		return l;
	};

	const controller = new RecapController({
		isIdle: () => ctx?.isIdle() ?? false,
		hasPendingMessages: () => ctx?.hasPendingMessages() ?? true,
		leafId: () => ctx?.sessionManager.getLeafId() ?? null,
		config: async () => (await loadConfig()).config,
		prepare: async (run, signal) => (await kit.ask<Prepared>("recap.prepare", run, { timeoutMs: Deadline.command, signal }))?.result,
		summarize: (p, config, signal) => {
			const registry = ctx!.modelRegistry;
			return summarizeRun(
				{
					find: (provider, model) => registry.find(provider, model),
					hasAuth: (model) => registry.hasConfiguredAuth(model),
					complete: (model, context, options) => registry.streamSimple(model, context as any, options).result() as any,
					verdict: async (answer) => (await kit.ask<Verdict>("recap.verdict", answer, { timeoutMs: Deadline.command }))?.result,
				},
				p,
				config,
				signal,
			);
		},
		append: (data) => pi.appendEntry<RecapEntryData>(RECAP_ENTRY, data),
		status: (text) => status(ctx, STATUS_KEY, text),
		warn: (text) => {
			if (ctx?.hasUI) notify(ctx, text, "warning");
		},
		begin: () => kit.arbiter.begin("recap"),
		end: () => kit.arbiter.end("recap"),
		childRunning: () => anyChildRunning(),
	});

	pi.on("session_start", (_event, c) => {
		ctx = c;
		child = kit.hello()?.role === "child";
		controller.sessionStart(c.mode === "tui" && !child);
		unsubscribe?.();
		unsubscribe = child ? undefined : onActivity(() => void controller.childActivity());
	});

	// Interactive input and the user's own shell commands mean the user is
	// back: a pending recap would land mid-turn.
	kit.arbiter.observeInput("recap", (event) => {
		if (event?.source === "interactive") controller.userActivity();
	});
	pi.on("user_bash", () => {
		controller.userActivity();
		return undefined;
	});

	pi.on("before_agent_start", (_event, c) => {
		ctx = c;
		if (child) reportActivity(token, true);
		controller.beforeAgentStart(c.sessionManager.getLeafId() ?? null);
		return undefined;
	});

	pi.on("agent_settled", (_event, c) => {
		ctx = c;
		if (child) reportActivity(token, false);
		void controller.settled();
	});

	pi.on("session_shutdown", async () => {
		if (child) reportActivity(token, false);
		unsubscribe?.();
		unsubscribe = undefined;
		await controller.shutdown();
	});

	pi.registerEntryRenderer(RECAP_ENTRY, (entry, { expanded }, theme) => {
		const box = new Box(1, 1, (t: string) => theme.bg("customMessageBg", t));
		const data = entry.data;
		if (!isRecapEntryData(data)) {
			box.addChild(new Text(theme.fg("warning", "Recap unavailable"), 0, 0));
			return box;
		}
		// The card is read back from the session file, which anything may
		// have written: its text is written out visibly.
		box.addChild(new Text(theme.fg("accent", theme.bold("✦ Recap")), 0, 0));
		box.addChild(new Spacer(1));
		box.addChild(new Markdown(visible(data.recap), 0, 0, getMarkdownTheme()));
		if (data.next) box.addChild(new Text(`${theme.fg("muted", "Next:")} ${visible(data.next)}`, 0, 0));
		if (expanded) {
			const source = `${echo(`${data.provider}/${data.model}`)} · ${visible(data.reasoning)}${data.fallback ? " · local fallback" : ""}`;
			box.addChild(new Text(theme.fg("dim", source), 0, 0));
		}
		return box;
	});

	pi.registerCommand("recap", {
		description: "Run recaps: choose the recap model and its reasoning, or turn recaps on and off",
		handler: async (_args, c) => {
			if (c.mode !== "tui") {
				notify(c, "Recap settings are only available in the TUI.", "info");
				return;
			}
			const loaded = await loadConfig();
			if (loaded.unavailable) {
				notify(c, "Recap settings are unavailable: pi-session's engine is not answering, so recaps are off for now.", "warning");
				return;
			}
			const config = loaded.config;
			const change = "Change model…";
			const toggle = config.enabled ? "Disable recaps" : "Enable recaps";
			const choice = await c.ui.select("Recap", [change, toggle]);
			if (choice !== change && choice !== toggle) return;
			if (loaded.noSave) {
				notify(c, `Could not save the private summary config: ${loaded.noSave}`, "error");
				return;
			}
			if (choice === change) return changeModel(c, config);
			await toggleRecaps(file(), config, controller, (text, level) => notify(c, text, level));
		},
	});

	const changeModel = async (c: ExtensionCommandContext, config: SummaryConfig) => {
		const model = await pickModel(c);
		if (!model) return;
		const reasoning = await pickReasoning(c, model, config.reasoning);
		if (!reasoning) return;
		const next: SummaryConfig = { ...config, provider: model.provider, model: model.id, reasoning };
		try {
			await saveSummaryConfig(file(), next);
		} catch {
			notify(c, "Could not save the private summary model config.", "error");
			return;
		}
		notify(c, `Summary model: ${echo(`${next.provider}/${next.model}`)} · ${next.reasoning}`, "info");
	};
}

type Model = ReturnType<ExtensionContext["modelRegistry"]["getAvailable"]>[number];

// pickModel offers the available models, cheapest first.
async function pickModel(c: ExtensionCommandContext): Promise<Model | undefined> {
	const models = cheapestFirst(c.modelRegistry.getAvailable() as Model[]);
	if (models.length === 0) {
		notify(c, "No configured models are available for run recaps.", "warning");
		return undefined;
	}
	const labels = models.map((m) => visible(modelLabel(m)));
	const choice = await c.ui.select("Recap model", labels);
	if (choice === undefined) return undefined;
	return models[labels.indexOf(choice)];
}

// pickReasoning offers the levels the model supports, the current one
// preselected when it is among them.
async function pickReasoning(c: ExtensionCommandContext, model: Model, current: ReasoningLevel): Promise<ReasoningLevel | undefined> {
	const levels = getSupportedThinkingLevels(model as any) as ReasoningLevel[];
	const start = levels.includes(current) ? current : levels[0];
	return c.ui.custom<ReasoningLevel | undefined>((_tui, _theme, _kb, done) => {
		const selector = new ThinkingSelectorComponent(
			start as any,
			levels as any,
			(level) => done(level as ReasoningLevel),
			() => done(undefined),
		);
		return selector;
	});
}
