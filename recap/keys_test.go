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
		// Names about secrets that hold none, and look-alikes.
		{"totalTokens", keyPlain},
		{"max_tokens", keyPlain},
		{"maxTokens", keyPlain},
		{"tokenCount", keyPlain},
		{"token_type", keyPlain},
		{"tokenizer", keyPlain},
		{"certificate-authority-data", keyPlain},
		{"client-certificate-data", keyPlain},
		{"author", keyPlain},
		{"authority", keyPlain},
		{"auth_method", keyPlain},
		{"password_file", keyPlain},
		{"passwordFile", keyPlain},
		{"password-stdin", keyPlain},
		{"token-file", keyPlain},
		{"secretName", keyPlain},
		{"secret_ref", keyPlain},
		{"key", keyPlain},
		{"keys", keyPlain},
		{"sortKey", keyPlain},
		{"publicKey", keyPlain},
		{"keyId", keyPlain},
		{"accessKeyId", keyPlain},
		{"sessionId", keyPlain},
		{"bypass", keyPlain},
		{"compass", keyPlain},
		{"passwordless", keyPlain},
		{"passphrase-fd", keyPlain},
		{"SSH_AUTH_SOCK", keyPlain},
		{"tokens", keyPlain},
		{"", keyPlain},
	}
	for _, tt := range tests {
		if got := classifyKey(tt.name); got != tt.want {
			t.Errorf("classifyKey(%q) = %v, want %v (words %q)", tt.name, got, tt.want, splitWords(tt.name))
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
