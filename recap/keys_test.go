package recap

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassifyKey(t *testing.T) {
	tests := []struct {
		name string
		want keyClass
	}{
		{"password", keyPassword},
		{"DB_PASSWORD", keyPassword},
		{"PGPASSWORD", keyPassword},
		{"MYSQL_PWD", keyPassword},
		{"db_pass", keyPassword},
		{"passphrase", keyPassword},
		{"storepass", keyPassword},
		{"spring.datasource.password", keyPassword},
		{"password_hash", keyPassword},
		{"token", keyToken},
		{"GITHUB_TOKEN", keyToken},
		{"accessToken", keyToken},
		{"access_token", keyToken},
		{"api_key", keyToken},
		{"apiKey", keyToken},
		{"X-Api-Key", keyToken},
		{"OPENAI_API_KEY", keyToken},
		{"AWS_SECRET_ACCESS_KEY", keyToken},
		{"aws_secret_access_key", keyToken},
		{"client_secret", keyToken},
		{"clientSecret", keyToken},
		{"secret", keyToken},
		{"Authorization", keyToken},
		{"auth", keyToken},
		{"basicAuth", keyToken},
		{"cookie", keyToken},
		{"private_key", keyToken},
		{"privateKey", keyToken},
		{"client-key-data", keyToken},
		{"AccountKey", keyToken},
		{"SharedAccessKey", keyToken},
		{"credentials", keyToken},
		{"token_secret", keyToken},
		{"apikey", keyToken},
		{"DB_PASSWORD2", keyPassword},
		{"MYSQLROOTPASSWORD", keyPassword},
		{"adminpassword", keyPassword},
		{"passwords", keyPassword},
		{"identitytoken", keyToken},
		{"webhooksecret", keyToken},
		{"secrets", keyToken},
		{"API_KEY_2", keyToken},
		{"XAPIKey", keyToken},
		{"api_keys", keyToken},
		{"privkey", keyToken},
		{"db_creds", keyToken},
		{"secret_key_base", keyToken},
		// A secret word before a suffix: the name is about the secret, and
		// key material under it is secret.
		{"private_key_id", keyAbout},
		{"privateKeyId", keyAbout},
		{"privateKeyID", keyAbout},
		{"PRIVATE_KEY_ID", keyAbout},
		{"client-secret-id", keyAbout},
		{"SecretID", keyAbout},
		{"secretid", keyAbout},
		{"tokenId", keyAbout},
		{"api_key_id", keyAbout},
		{"X-Api-Key-Id", keyAbout},
		{"secret_access_key_id", keyAbout},
		{"token_key", keyAbout},
		{"password_min_length", keyAbout},
		{"password_reset_expiry", keyAbout},
		{"secret_manager_project", keyAbout},
		{"max_token", keyAbout},
		{"min_password", keyAbout},
		{"token_status", keyAbout},
		{"CreateDate", keyPlain},
		// Names about secrets that hold none, and look-alikes.
		{"totalTokens", keyPlain},
		{"max_tokens", keyPlain},
		{"maxTokens", keyPlain},
		{"tokenCount", keyAbout},
		{"token_type", keyAbout},
		{"tokenizer", keyPlain},
		{"certificate-authority-data", keyPlain},
		{"client-certificate-data", keyPlain},
		{"author", keyPlain},
		{"authority", keyPlain},
		{"auth_method", keyAbout},
		{"password_file", keyAbout},
		{"passwordFile", keyAbout},
		{"password-stdin", keyAbout},
		{"token-file", keyAbout},
		{"secretName", keyAbout},
		{"secret_ref", keyAbout},
		{"key", keyPlain},
		{"keys", keyPlain},
		{"sortKey", keyPlain},
		{"publicKey", keyPlain},
		{"keyId", keyPlain},
		{"key_id", keyPlain},
		{"kid", keyPlain},
		{"client_id", keyPlain},
		{"project_id", keyPlain},
		{"session_id", keyPlain},
		{"secretary_name", keyPlain},
		{"author_id", keyPlain},
		{"authority_key_id", keyPlain},
		{"public_key_id", keyPlain},
		{"auth_user_id", keyPlain},
		{"token_issuer", keyPlain},
		{"auth_provider_x509_cert_url", keyPlain},
		{"oauth_client_id", keyPlain},
		{"valid", keyPlain},
		{"android", keyPlain},
		{"accessKeyId", keyAbout},
		{"sessionId", keyPlain},
		{"bypass", keyPlain},
		{"compass", keyPlain},
		{"passwordless", keyPlain},
		{"passphrase-fd", keyAbout},
		{"SSH_AUTH_SOCK", keyAbout},
		{"tokens", keyPlain},
		{"", keyPlain},
	}
	for _, tt := range tests {
		if got := classifyKey(tt.name); got != tt.want {
			t.Errorf("classifyKey(%q) = %v, want %v (words %q)", tt.name, got, tt.want, splitWords(tt.name))
		}
	}
}

func TestOpaque(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"3f1e7c2a9b4d4e8fa1c6d2b7e9f0a1b2c3d4e5f6", true}, // a service account's private_key_id
		{"5894166b-ee7a-4773-ac3b-93247570e796", true},     // a UUID with few letters
		{"AKIAQ3EGT5LKJ7PXWZ2M", true},
		{"wXxNvuzEruccxoYQhRtbevXHGqfgSP+2ZOZunJts=", true}, // base64 whose long run has no digit
		{"axpVVQPHrHYzTOHIwKUE7Q", true},
		{"0123456789ABCDEF0123456789ABCDEF", true},
		{"deadbeef00000001", true},
		{"'3f1e7c2a9b4d4e8fa1c6d2b7e9f0a1b2'", true},
		// Numbers, words, names, paths, times, versions.
		{"1234", false},
		{"112233445566778899001", false},
		{"cl100k_base", false},
		{"acme-prod-123456", false},
		{"my-db-secret", false},
		{"MyApplicationSecretName", false},
		{"HTTPSProxyURLHandler", false},
		{"MyAppDatabasePassword2024", false},
		{"TYPE_GOOGLE_CREDENTIALS_FILE", false},
		{"projects/acme/secrets/db-pass/versions/3", false},
		{"https://oauth2.googleapis.com/token", false},
		{"2026-12-01T10:00:00Z", false},
		{"20261201T100000Z", false},
		{"1.2.3-beta.4+build.5", false},
		{"v0.0.0-20240101000000-abcdef123456", false},
		{"ci-deploy-2024-11-30", false},
		{"deadbeefdeadbeef", false},
		{"Bearer 3f1e7c2a9b4d4e8fa1c6", false},
		{"dmlUc-FvszoDv8Op-qxCWhMItrHe_jl1FnmUZmKEj_x", true}, // base64url: - and _ cut its runs short
		{"-p1PnbwEXXH-LVIVVGuFwyv_UNW4-wqSzgmIKlmq2_x", true},
		{"HttpApiKeyAuth.d.ts", false},
		{"MyCompany-Prod-Secret-01", false},
		{"Release-2024-Q4-Final-Build", false},
		{"src/components/UserProfile/Avatar", false},
		{"3f1e7c2a9b4d", false}, // too short
	}
	for _, tt := range tests {
		if got := opaque(tt.v); got != tt.want {
			t.Errorf("opaque(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"AWSSecretAccessKey", []string{"aws", "secret", "access", "key"}},
		{"X-Api-Key", []string{"x", "api", "key"}},
		{"client_secret", []string{"client", "secret"}},
		{"v1Token", []string{"v1", "token"}},
		{"spring.datasource.password", []string{"spring", "datasource", "password"}},
		{"HTTPSProxy", []string{"https", "proxy"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, splitWords(tt.name)); diff != "" {
			t.Errorf("splitWords(%q): %s", tt.name, diff)
		}
	}
}
