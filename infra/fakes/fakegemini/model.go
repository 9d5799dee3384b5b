package fakegemini

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/oracle"
)

// modelResource is a Model as the Gemini API describes it, reduced to the
// fields the fake knows.
type modelResource struct {
	Name                       string   `json:"name"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

// handleGetModel serves GET /v1beta/models/{model}: the model's description,
// the cheap authenticated call a client makes to check its API key. The API
// key is checked as generateContent checks it; any well-formed model name is
// known. It is not a generateContent request: it is not recorded in the
// calls and uses up no scenario.
func (s *Server) handleGetModel(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	status := s.serveGetModel(w, r, model)
	s.log.Debug("fakegemini: get model", "model", oracle.Clip(model, 64), "status", status)
}

func (s *Server) serveGetModel(w http.ResponseWriter, r *http.Request, model string) int {
	var e *apiError
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case strings.Contains(model, ":"):
		e = notFound(r) // GET of a method such as :generateContent
	case !validModel.MatchString(model):
		e = newAPIError(http.StatusNotFound, "models/%s is not found for API version v1beta.", oracle.Clip(model, 64))
	case key == "":
		e = missingKey()
	case s.keyRefused(key):
		e = invalidKey()
	}
	if e != nil {
		writeAPIError(w, e)
		return e.Code
	}
	s.writeJSON(w, http.StatusOK, modelResource{
		Name:                       "models/" + model,
		Version:                    "001",
		DisplayName:                displayName(model),
		SupportedGenerationMethods: []string{"generateContent"},
	})
	return http.StatusOK
}

// displayName titles a model id as Google does: gemini-2.5-flash is
// "Gemini 2.5 Flash".
func displayName(model string) string {
	words := strings.Split(model, "-")
	for i, w := range words {
		if r, n := utf8.DecodeRuneInString(w); n > 0 {
			words[i] = string(unicode.ToUpper(r)) + w[n:]
		}
	}
	return strings.Join(words, " ")
}
