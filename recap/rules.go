package recap

import (
	"regexp"
	"strings"
	"sync"
)

// tokenRules match the credential formats of common clouds and services
// by their fixed prefixes and lengths. The prefixes follow gitleaks'
// default rules (github.com/gitleaks/gitleaks, config/gitleaks.toml), a
// maintained reference; its code is not used (see the README: on raw
// session lines it missed about 4 secrets in 10 and cost 10 MB of binary).
// Each rule starts with a literal, so that Go's regexp finds candidates
// with a substring search, and the match must start at a word boundary
// (matchTokens checks it). needle, when set, must be in the text for the
// rule to run (the rules without a literal prefix).
var tokenRules = []tokenRule{
	// AWS access key ids.
	{re: `AKIA[A-Z0-9]{16}`}, {re: `ASIA[A-Z0-9]{16}`}, {re: `ABIA[A-Z0-9]{16}`},
	{re: `ACCA[A-Z0-9]{16}`}, {re: `A3T[A-Z0-9][A-Z0-9]{16}`},
	// GitHub: personal, OAuth, user-to-server, server-to-server, refresh; fine-grained.
	{re: `gh[pousr]_[A-Za-z0-9]{36}`},
	{re: `github_pat_[A-Za-z0-9_]{22,255}`},
	// GitLab tokens, runner registration tokens.
	{re: `gl(?:pat|dt|rt|ptt|ft|cbt|imt|soat|oas)-[A-Za-z0-9_\-]{20}`},
	{re: `glagent-[A-Za-z0-9_\-]{50,}`},
	{re: `GR1348941[A-Za-z0-9_\-]{20,}`},
	// Slack bot, user, app and config tokens, webhooks.
	{re: `xox[abposre]-(?:[0-9A-Za-z]+-)*[0-9A-Za-z]{8,}`},
	{re: `xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`},
	{re: `hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{20,}`},
	// Stripe secret and restricted keys, webhook secrets.
	{re: `sk_(?:live|test|prod)_[A-Za-z0-9]{10,}`}, {re: `rk_(?:live|test|prod)_[A-Za-z0-9]{10,}`},
	{re: `whsec_[A-Za-z0-9+/=]{24,}`},
	// OpenAI, Anthropic, OpenRouter, DeepSeek and the other sk- keys.
	// (Random, so never only lower-case words: sk-learn-compatible-wrapper is a name.)
	{re: `sk-(?:ant-(?:api|admin|sid)\d\d-|proj-|svcacct-|admin-|or-v1-|None-|lf-)?[A-Za-z0-9_\-]{20,}`, check: notWords},
	// Google API keys, OAuth client secrets and access tokens.
	{re: `AIza[0-9A-Za-z_\-]{35}`},
	{re: `GOCSPX-[0-9A-Za-z_\-]{28}`},
	{re: `ya29\.[0-9A-Za-z_\-]{20,}`},
	// SendGrid, npm, PyPI, Hugging Face.
	{re: `SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}`},
	{re: `npm_[A-Za-z0-9]{36}`},
	{re: `pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}`},
	{re: `hf_[A-Za-z0-9]{30,}`}, {re: `api_org_[A-Za-z0-9]{30,}`},
	// DigitalOcean, Shopify, Mailgun, Mailchimp, Twilio, Telegram, Databricks.
	{re: `do[por]_v1_[a-f0-9]{64}`},
	{re: `shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}`},
	{re: `key-[0-9a-f]{32}`},
	{re: `[0-9a-f]{32}-us\d{1,2}`, needle: "-us"},
	{re: `SK[0-9a-fA-F]{32}`},
	{re: `(?:bot)?\d{8,10}:AA[0-9A-Za-z_\-]{33}`, needle: ":AA"},
	{re: `dapi[a-f0-9]{32}(?:-\d)?`},
	// age, HashiCorp Vault, Doppler, Linear, Postman, Grafana, Supabase.
	{re: `AGE-SECRET-KEY-1[0-9A-Z]{58}`},
	{re: `hv[sbr]\.[A-Za-z0-9_\-]{24,}`},
	{re: `dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}`},
	{re: `lin_(?:api|oauth)_[A-Za-z0-9]{40}`},
	{re: `PMAK-[a-f0-9]{24}-[a-f0-9]{34}`},
	{re: `glc_[A-Za-z0-9+/]{32,}={0,2}`},
	{re: `glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`},
	{re: `sbp_[a-f0-9]{40}`},
	// Replicate, Groq, xAI, Perplexity, Atlassian, Sentry, Pulumi.
	{re: `r8_[A-Za-z0-9]{37}`},
	{re: `gsk_[A-Za-z0-9]{48,}`},
	{re: `xai-[A-Za-z0-9]{70,}`},
	{re: `pplx-[A-Za-z0-9]{40,}`},
	{re: `ATATT3[A-Za-z0-9_\-=]{150,}`},
	{re: `sntry[su]_[A-Za-z0-9+/=_\-]{40,}`},
	{re: `pul-[a-f0-9]{40}`},
	// Terraform Cloud, Square, Facebook, Cloudflare origin CA, Fly.io, Heroku.
	{re: `[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9_\-=]{60,}`, needle: ".atlasv1."},
	{re: `EAAA[A-Za-z0-9_\-]{60}`},
	{re: `sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}`},
	{re: `EAA[A-Za-z0-9]{90,}`},
	{re: `v1\.0-[a-f0-9]{24}-[a-f0-9]{146}`},
	{re: `fm[12][ar]?_[a-zA-Z0-9+/]{100,}={0,3}`},
	{re: `HRKU-AA[0-9a-zA-Z_\-]{58}`},
	// Alibaba, Artifactory, Clojars, Contentful, Defined Networking, Duffel,
	// Dynatrace, EasyPost, Flutterwave, Frame.io, Harness, Infracost, 42.
	{re: `LTAI[A-Za-z0-9]{20}`},
	{re: `AKCp[A-Za-z0-9]{69}`}, {re: `cmVmd[A-Za-z0-9]{59}`},
	{re: `CLOJARS_[A-Za-z0-9]{60}`},
	{re: `CFPAT-[A-Za-z0-9_\-]{43}`},
	{re: `dnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}`},
	{re: `duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}`},
	{re: `dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}`},
	{re: `EZ[AT]K[A-Za-z0-9]{54}`},
	{re: `FLW(?:PUB|SEC)K(?:_TEST)?-[a-fA-F0-9]{32}-X`},
	{re: `fio-u-[A-Za-z0-9_\-=]{64}`},
	{re: `pat\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}`}, {re: `sat\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}`},
	{re: `ico-[A-Za-z0-9]{32}`},
	{re: `s-s4t2(?:ud|af)-[a-f0-9]{64}`},
	// New Relic, Octopus Deploy, OpenShift, Plaid, PlanetScale, Prefect,
	// ReadMe, RubyGems, Scalingo, Brevo, SettleMint, Shippo, SonarQube,
	// Sourcegraph, Typeform, Yandex, 1Password, Notion, Figma, Mapbox.
	{re: `NRAK-[A-Z0-9]{27}`}, {re: `NRJS-[a-f0-9]{19}`}, {re: `NRII-[A-Za-z0-9_\-]{32}`},
	{re: `API-[A-Z0-9]{26}`},
	{re: `sha256~[A-Za-z0-9_\-]{43}`},
	{re: `access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`},
	{re: `pscale_(?:tkn|oauth|pw)_[A-Za-z0-9=._\-]{32,64}`},
	{re: `pnu_[A-Za-z0-9]{36}`},
	{re: `rdme_[a-z0-9]{70}`},
	{re: `rubygems_[a-f0-9]{48}`},
	{re: `tk-us-[A-Za-z0-9_\-]{48}`},
	{re: `xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}`}, {re: `xsmtpsib-[a-f0-9]{64}-[A-Za-z0-9]{16}`},
	{re: `sm_(?:pat|aat|sat)_[A-Za-z0-9]{16}`},
	{re: `shippo_(?:live|test)_[a-fA-F0-9]{40}`},
	{re: `sq[upa]_[a-f0-9]{40}`},
	{re: `sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}`},
	{re: `tfp_[A-Za-z0-9_\-.=]{59}`},
	{re: `AQVN[A-Za-z0-9_\-]{35,38}`}, {re: `t1\.[A-Za-z0-9_\-]+={0,2}\.[A-Za-z0-9_\-]{86}={0,2}`},
	{re: `ops_eyJ[A-Za-z0-9+/]{250,}={0,3}`},
	{re: `ntn_[0-9]{11}[A-Za-z0-9]{35}`}, {re: `secret_[A-Za-z0-9]{43}`},
	{re: `figd_[A-Za-z0-9_\-]{40}`},
	{re: `sk\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{20,}`},
	// Twitter app bearer tokens, Discord bot tokens (their first part is the
	// bot's id, a decimal number, in base64), Discord and Teams webhooks.
	{re: `AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%]{40,}`},
	{re: `MT[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`}, {re: `Mj[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`},
	{re: `Mz[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`}, {re: `ND[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`},
	{re: `NT[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`}, {re: `Nj[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`},
	{re: `Nz[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`}, {re: `OD[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`},
	{re: `OT[A-Za-z0-9_\-]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}`},
	{re: `discord\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,}`}, {re: `discordapp\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,}`},
	{re: `webhook\.office\.com/webhookb2/[A-Za-z0-9\-@]{36,80}/IncomingWebhook/[a-f0-9]{32}/[a-f0-9\-]{36}`},
	// Azure AD client secrets.
	{re: `[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.\-]{31,34}`, needle: "Q~"},
	// JSON web tokens (the signature may be missing or cut).
	{re: `eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*)?`},
}

// tokenRule is one provider format.
type tokenRule struct {
	re     string
	needle string            // a substring the text must hold for the rule to run
	check  func(string) bool // when set, a match must pass it
	rx     *regexp.Regexp    // re, anchored at the start when it has a literal prefix
	prefix string            // the literal prefix of re
}

// notWords reports whether a match holds a digit or an upper-case letter
// after its prefix: random tokens do, kebab-case names do not.
func notWords(m string) bool {
	_, body, _ := strings.Cut(m, "-")
	for i := 0; i < len(body); i++ {
		if c := body[i]; '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// rulesByFirst lists the rules with a literal prefix by its first byte;
// needleRules are the others.
var (
	rulesByFirst [256][]int
	needleRules  []int
	// prefixPairs holds the first two bytes of the prefixes, a quick test
	// before the rules of a first byte are tried.
	prefixPairs [256][4]uint64
)

// mayStart reports whether a prefix starts with the bytes a, b.
func mayStart(a, b byte) bool { return prefixPairs[a][b>>6]&(1<<(b&63)) != 0 }

// rulesOnce compiles the token rules on first use, not at every start of
// pi-session (whose session leader and short commands never redact).
var rulesOnce sync.Once

func compileRules() {
	for i := range tokenRules {
		r := &tokenRules[i]
		r.prefix, _ = regexp.MustCompile(r.re).LiteralPrefix()
		if r.prefix == "" {
			r.rx = regexp.MustCompile(r.re)
			needleRules = append(needleRules, i)
			continue
		}
		r.rx = regexp.MustCompile(`^(?:` + r.re + `)`)
		rulesByFirst[r.prefix[0]] = append(rulesByFirst[r.prefix[0]], i)
		if len(r.prefix) < 2 {
			panic("recap: a token rule's prefix is shorter than two bytes: " + r.re)
		}
		prefixPairs[r.prefix[0]][r.prefix[1]>>6] |= 1 << (r.prefix[1] & 63)
	}
}

var (
	// pemBeginRE starts a private key block (PEM, OpenSSH, PGP).
	pemBeginRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`) })
	pemEndRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`) })
	// puttyRE starts the private part of a PuTTY key file.
	puttyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Private-Lines: *\d+`) })
	// xmlTagRE finds an opening tag whose text may be a secret.
	xmlTagRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<([A-Za-z][A-Za-z0-9_.\-:]*)>`) })
	// bearerRE finds a bearer credential outside a header.
	bearerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]+=*)`) })
	// netrcRE finds netrc's "password value" on lines that are netrc entries.
	netrcLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(?:^|\s)(?:machine|default|login)\s`) })
	netrcRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(?:^|\s)(?:password|passwd)[ \t]+(\S+)`) })
	// continuationRE is a shell line continuation and the indentation after it.
	continuationRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\\\r?\n[ \t]*`) })
)

// authSchemes are the words that come before the credential in an
// Authorization header.
var authSchemes = set("bearer", "basic", "token", "bot", "key", "sso-key", "ssws", "apikey", "hmac", "jwt", "oauth", "splunk", "klaviyo-api-key", "dsn")

// authRestOfLine are schemes whose credential is the rest of the line.
var authRestOfLine = set("digest", "negotiate", "ntlm", "aws4-hmac-sha256", "hawk", "mac")

// urlSecretParams are query parameter names that hold credentials although
// no secret word names them: signed URLs (S3, GCS, Azure SAS).
var urlSecretParams = set("sig", "signature", "x-amz-signature", "x-goog-signature", "x-amz-security-token", "code_verifier", "key")

// passwordCommands maps a command to its flags that take a password: a
// short flag takes its value attached (-psecret) or as the next word.
var passwordCommands = map[string]string{
	"mysql": "p", "mysqldump": "p", "mysqladmin": "p", "mysqlimport": "p", "mysqlshow": "p",
	"mysqlcheck": "p", "mysqlsh": "p", "mysqlpump": "p", "mariadb": "p", "mariadb-dump": "p",
	"mariadb-admin": "p", "sshpass": "p", "mongo": "p", "mongosh": "p", "mongodump": "p",
	"mongorestore": "p", "mongoexport": "p", "mongoimport": "p", "redis-cli": "a", "zip": "P",
	"unzip": "P", "7z": "p", "7za": "p", "7zr": "p", "rar": "p", "unrar": "p", "sqlcmd": "P",
	"bcp": "P", "osql": "P", "isql": "P", "ldapsearch": "w", "ldapadd": "w", "ldapmodify": "w",
	"ldapdelete": "w", "ldapwhoami": "w", "ldappasswd": "w", "ldapcompare": "w", "mosquitto_pub": "P",
	"mosquitto_sub": "P", "rdesktop": "p", "openssl": "k", "smbclient": "", "curl": "", "wget": "",
	"htpasswd": "", "influx": "p", "cqlsh": "p", "vertica": "w", "vsql": "w", "nzsql": "pw",
	"ftp": "", "lftp": "", "git": "", "psexec": "p", "psexec.exe": "p", "gh": "", "ssh-keygen": "NP",
}

// loginCommands take -p as a password only in their login subcommand
// (docker run -p publishes a port).
var loginCommands = set("docker", "podman", "nerdctl", "helm", "skopeo", "buildah", "oras", "crane", "regctl", "cf", "oc", "az")

// configCommands set a named value with "config" or "configure" (git
// config user.password x, npm config set key x, aws configure set key x).
var configCommands = set("git", "npm", "yarn", "pnpm", "aws", "gcloud", "poetry", "pip", "conda")

// stdinCommands read a secret on their standard input (with the flags
// stdinSecrets checks).
var stdinCommands = set("echo", "printf", "chpasswd", "sudo")

// httpieCommands take -a user:password.
var httpieCommands = set("http", "https", "xh", "xhs")

// userPassFlags take user:password (curl -u, --user, --proxy-user).
var userPassFlags = set("u", "U", "user", "proxy-user", "userpass", "usr")
