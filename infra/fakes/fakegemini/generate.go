package fakegemini

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// maxRequestBody is Google's limit on an inline request, 20 MB.
const maxRequestBody = 20 << 20

var validModel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// generateRequest is the part of a GenerateContentRequest the fake reads.
type generateRequest struct {
	Contents          []content        `json:"contents"`
	SystemInstruction *content         `json:"systemInstruction"`
	GenerationConfig  GenerationConfig `json:"generationConfig"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text string `json:"text"`
}

// text is the concatenation of c's text parts.
func (c *content) text() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// userText joins the text of the request's user turns with newlines.
func (req *generateRequest) userText() string {
	var turns []string
	for i := range req.Contents {
		if c := &req.Contents[i]; c.Role == "" || c.Role == "user" {
			turns = append(turns, c.text())
		}
	}
	return strings.Join(turns, "\n")
}

// generateResponse is a GenerateContentResponse as Google sends it.
type generateResponse struct {
	Candidates     []candidate     `json:"candidates,omitempty"`
	PromptFeedback *promptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  usageMetadata   `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
}

type candidate struct {
	Content      content `json:"content"`
	FinishReason string  `json:"finishReason"`
	Index        int     `json:"index"`
}

type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type usageMetadata struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

// generation is one generateContent request as the fake understood it.
type generation struct {
	model  string
	key    string
	req    generateRequest
	tier   oracle.Tier
	pass   string    // the chat pass of a free-text request; empty for a verdict
	err    *apiError // why the request itself is refused, if it is
	seq    uint64
	prompt [sha256.Size]byte // hash of the system instruction and user text
}

// handleGenerate serves POST /v1beta/models/{model}:generateContent.
func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("action"), ":")
	if method != "generateContent" {
		writeAPIError(w, notFound(r))
		return
	}
	if !validModel.MatchString(model) {
		writeAPIError(w, newAPIError(http.StatusNotFound,
			"models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
			oracle.Clip(model, 64)))
		return
	}
	g := generation{model: model, key: r.Header.Get("x-goog-api-key")}
	if g.key == "" {
		g.key = r.URL.Query().Get("key")
	}
	g.req, g.tier, g.err = readRequest(w, r)
	system, user := g.req.SystemInstruction.text(), g.req.userText()
	g.prompt = sha256.Sum256([]byte(system + "\x00" + user))
	if g.err == nil && g.req.GenerationConfig.ResponseMIMEType == chatMIMEType {
		g.tier, g.pass = "", chatPass(system)
	}

	call := &Call{
		Time:              s.now(),
		Model:             model,
		APIKeyPresent:     g.key != "",
		SystemInstruction: system,
		UserText:          user,
		GenerationConfig:  g.req.GenerationConfig,
		Tier:              g.tier,
		Pass:              g.pass,
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.sequence++
	g.seq = s.sequence
	sc := s.takeScenario(g.pass)
	s.mu.Unlock()

	status := s.serveGeneration(w, r, g, sc)

	s.mu.Lock()
	call.Status = status
	s.mu.Unlock()
	s.log.Debug("fakegemini: generateContent", "model", model, "tier", g.tier, "status", status)
}

// serveGeneration answers g under scenario sc and returns the HTTP status
// sent, or 0 when the client gave up first.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, g generation, sc Scenario) int {
	ctx := r.Context()
	if sc.LatencyMS > 0 {
		if err := s.sleep(ctx, time.Duration(sc.LatencyMS)*time.Millisecond); err != nil {
			return 0
		}
	}
	if sc.Hang {
		<-ctx.Done()
		return 0
	}
	var e *apiError
	switch {
	case g.key == "":
		e = missingKey()
	case s.keyRefused(g.key):
		e = invalidKey()
	case sc.Status != 0:
		e = scenarioError(sc.Status, sc.retryAfter())
	default:
		e = g.err
	}
	if e != nil {
		writeAPIError(w, e)
		return e.Code
	}
	s.writeJSON(w, http.StatusOK, respond(g, sc))
	return http.StatusOK
}

// respond builds the answer to an accepted request.
func respond(g generation, sc Scenario) generateResponse {
	id := sha256.Sum256(binary.BigEndian.AppendUint64(g.prompt[:], g.seq))
	resp := generateResponse{
		ModelVersion: g.model,
		ResponseID:   base64.RawURLEncoding.EncodeToString(id[:16]),
		UsageMetadata: usageMetadata{
			PromptTokenCount: tokens(g.req.SystemInstruction.text()) + tokens(g.req.userText()),
		},
	}
	if sc.Blocked {
		resp.PromptFeedback = &promptFeedback{BlockReason: "SAFETY"}
	} else {
		text := verdictText(g.prompt, g.tier, sc)
		if g.pass != "" {
			text = chatText(g.prompt, g.pass, sc)
		}
		resp.Candidates = []candidate{{
			Content:      content{Role: "model", Parts: []part{{Text: text}}},
			FinishReason: "STOP",
		}}
		resp.UsageMetadata.CandidatesTokenCount = tokens(text)
	}
	resp.UsageMetadata.TotalTokenCount = resp.UsageMetadata.PromptTokenCount + resp.UsageMetadata.CandidatesTokenCount
	return resp
}

// tokens estimates a text's token count as Gemini's rule of thumb does:
// about four characters a token.
func tokens(s string) int {
	return (len(s) + 3) / 4
}

// readRequest reads and checks a GenerateContentRequest and finds the tier
// its response schema asks for. A refused request comes back with the
// error Google would send.
func readRequest(w http.ResponseWriter, r *http.Request) (generateRequest, oracle.Tier, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
			return generateRequest{}, "", invalidArgument("Request payload size exceeds the limit: %d bytes.", maxRequestBody)
		}
		return generateRequest{}, "", invalidArgument("Invalid JSON payload received. The request body could not be read.")
	}
	var req generateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		if typeErr := new(json.UnmarshalTypeError); errors.As(err, &typeErr) {
			return generateRequest{}, "", invalidArgument("Invalid JSON payload received. Invalid value at '%s' (%s).", typeErr.Field, typeErr.Value)
		}
		return generateRequest{}, "", invalidArgument("Invalid JSON payload received. Unexpected token.")
	}
	gc := &req.GenerationConfig
	gc.ResponseSchema = nullAsAbsent(gc.ResponseSchema)
	gc.ResponseJSONSchema = nullAsAbsent(gc.ResponseJSONSchema)
	if e := req.validate(); e != nil {
		return req, "", e
	}
	schema, field := gc.ResponseSchema, "response_schema"
	if len(schema) == 0 {
		schema, field = gc.ResponseJSONSchema, "response_json_schema"
	}
	tier, err := schemaTier(schema)
	if err != nil {
		return req, "", invalidArgument("* GenerateContentRequest.generation_config.%s: the schema must be a JSON object.\n", field)
	}
	return req, tier, nil
}

func nullAsAbsent(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// validate refuses what Google refuses among the fields the fake reads.
func (req *generateRequest) validate() *apiError {
	if len(req.Contents) == 0 {
		return invalidArgument("* GenerateContentRequest.contents: contents is not specified\n")
	}
	for i, c := range req.Contents {
		if c.Role != "" && c.Role != "user" && c.Role != "model" {
			return invalidArgument("Please use a valid role: user, model.")
		}
		if len(c.Parts) == 0 {
			return invalidArgument("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i)
		}
	}
	gc := req.GenerationConfig
	switch {
	case gc.Temperature != nil && (*gc.Temperature < 0 || *gc.Temperature > 2):
		return invalidArgument("* GenerateContentRequest.generation_config.temperature: must be between 0.0 and 2.0\n")
	case gc.TopP != nil && (*gc.TopP < 0 || *gc.TopP > 1):
		return invalidArgument("* GenerateContentRequest.generation_config.top_p: must be between 0.0 and 1.0\n")
	case gc.CandidateCount != nil && (*gc.CandidateCount < 0 || *gc.CandidateCount > 8):
		return invalidArgument("* GenerateContentRequest.generation_config.candidate_count: must be between 1 and 8\n")
	}
	switch gc.ResponseMIMEType {
	case "", "text/plain", "application/json", "application/xml", "application/yaml", "text/x.enum":
	default:
		return invalidArgument("* GenerateContentRequest.generation_config.response_mime_type: allowed mimetypes are `text/plain`, `application/json`, `application/xml`, `application/yaml` and `text/x.enum`.\n")
	}
	hasSchema, hasJSONSchema := len(gc.ResponseSchema) > 0, len(gc.ResponseJSONSchema) > 0
	switch {
	case hasSchema && hasJSONSchema:
		return invalidArgument("* GenerateContentRequest.generation_config.response_json_schema: response_json_schema and response_schema cannot both be set.\n")
	case (hasSchema || hasJSONSchema) && gc.ResponseMIMEType != "application/json":
		return invalidArgument("* GenerateContentRequest.generation_config.response_mime_type: a response schema needs response_mime_type application/json.\n")
	}
	return nil
}

// schemaTier reads the tier from a response schema's top-level properties:
// "strategy" means the Strategy Session, "breakdown" the Full Breakdown,
// anything else, or no schema, the Quick Take.
func schemaTier(raw json.RawMessage) (oracle.Tier, error) {
	if len(raw) == 0 {
		return oracle.TierQuick, nil
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return "", fmt.Errorf("decode response schema: %w", err)
	}
	if _, ok := schema.Properties["strategy"]; ok {
		return oracle.TierStrategy, nil
	}
	if _, ok := schema.Properties["breakdown"]; ok {
		return oracle.TierFull, nil
	}
	return oracle.TierQuick, nil
}
