package recap

import "regexp"

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
	{re: `sk-(?:ant-(?:api|admin|sid)\d\d-|proj-|svcacct-|admin-|or-v1-|None-|lf-)?[A-Za-z0-9_\-]{20,}`},
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
	{re: `\d{8,10}:AA[0-9A-Za-z_\-]{33}`, needle: ":AA"},
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
	// Azure AD client secrets.
	{re: `[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.\-]{31,34}`, needle: "Q~"},
	// JSON web tokens (the signature may be missing or cut).
	{re: `eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*)?`},
}

// tokenRule is one provider format.
type tokenRule struct {
	re     string
	needle string         // a substring the text must hold for the rule to run
	rx     *regexp.Regexp // re, anchored at the start when it has a literal prefix
	prefix string         // the literal prefix of re
}

// rulesByFirst lists the rules with a literal prefix by its first byte;
// needleRules are the others.
var (
	rulesByFirst [256][]int
	needleRules  []int
)

func init() {
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
	}
}

var (
	// pemBeginRE starts a private key block (PEM, OpenSSH, PGP).
	pemBeginRE = regexp.MustCompile(`-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`)
	pemEndRE   = regexp.MustCompile(`-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`)
	// puttyRE starts the private part of a PuTTY key file.
	puttyRE = regexp.MustCompile(`Private-Lines: *\d+`)
	// xmlTagRE finds an opening tag whose text may be a secret.
	xmlTagRE = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9_.\-:]*)>`)
	// bearerRE finds a bearer credential outside a header.
	bearerRE = regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]+=*)`)
	// netrcRE finds netrc's "password value" on lines that are netrc entries.
	netrcLineRE = regexp.MustCompile(`(?i)(?:^|\s)(?:machine|default|login)\s`)
	netrcRE     = regexp.MustCompile(`(?i)(?:^|\s)(?:password|passwd)[ \t]+(\S+)`)
	// continuationRE is a shell line continuation and the indentation after it.
	continuationRE = regexp.MustCompile(`\\\r?\n[ \t]*`)
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
	"ftp": "", "lftp": "", "git": "",
}

// loginCommands take -p as a password only in their login subcommand
// (docker run -p publishes a port).
var loginCommands = set("docker", "podman", "nerdctl", "helm", "skopeo", "buildah", "oras", "crane", "regctl", "cf", "oc")

// userPassFlags take user:password (curl -u, --user, --proxy-user).
var userPassFlags = set("u", "U", "user", "proxy-user", "userpass", "usr")
