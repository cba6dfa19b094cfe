// Admission webhooks' matchConditions: the CEL environment, their compilation
// (cached per webhook configuration) and their evaluation on a request, as in
// k8s.io/apiserver's admission/plugin/webhook/matchconditions.

package admission

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/watchcache/watchcache/pkg/crd/crdschema"
	"github.com/watchcache/watchcache/pkg/pipeline"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The matchConditions of admission policies and webhooks: CEL expressions
// (all true) narrowing what they match, compiled once per generation of
// the object holding them. A webhook's see object, oldObject and request;
// not here: authorizer (webhookEnv does not declare it, so a condition
// using it fails to compile and fails as the webhook's failurePolicy says).

// webhookEnv is the environment of webhooks' matchConditions.
var webhookEnv = func() *cel.Env {
	env, err := cel.NewEnv(append(crdschema.CELLibraries(),
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType), cel.Variable("request", cel.DynType))...)
	if err != nil {
		panic(fmt.Sprintf("the webhook matchConditions CEL environment: %v", err)) // fixed options: a bug
	}
	return env
}()

// namedProgram is a compiled named expression (a condition, a variable).
type namedProgram struct {
	name, expression string
	program          cel.Program
}

// compiler compiles expressions in env; err is the last compilation error
// (for the failurePolicy to decide when they are evaluated).
type compiler struct {
	env *cel.Env
	err error
}

// program compiles expr (nil if it does not compile).
func (c *compiler) program(expr string) cel.Program {
	ast, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		c.err = fmt.Errorf("compilation failed for %q: %w", expr, iss.Err())
		return nil
	}
	prg, err := c.env.Program(ast, crdschema.CELProgramOptions()...)
	if err != nil {
		c.err = err
	}
	return prg
}

// conditions compiles matchConditions.
func (c *compiler) conditions(mcs []admissionregistrationv1.MatchCondition) []namedProgram {
	var out []namedProgram
	for _, mc := range mcs {
		out = append(out, namedProgram{mc.Name, mc.Expression, c.program(mc.Expression)})
	}
	return out
}

// conditionsMatch evaluates matchConditions as kube-apiserver does: they
// match unless one is false; otherwise the errors of those that failed to
// evaluate are the error (for the failurePolicy to decide).
func conditionsMatch(conditions []namedProgram, vars map[string]any) (bool, error) {
	var errs []error
	for _, c := range conditions {
		out, _, err := c.program.Eval(vars)
		if err != nil {
			errs = append(errs, expressionError(c.expression, err))
			continue
		}
		if ok, _ := out.Value().(bool); !ok {
			return false, nil
		}
	}
	if len(errs) > 0 {
		return false, utilerrors.NewAggregate(errs)
	}
	return true, nil
}

// webhookConditions is a webhook's compiled matchConditions.
type webhookConditions struct {
	programs []namedProgram
	err      error // a compilation error
}

// match evaluates the conditions on req: whether they all hold, or why
// they could not be evaluated.
func (c *webhookConditions) match(req *pipeline.Request) (bool, error) {
	if c.err != nil {
		return false, c.err
	}
	if len(c.programs) == 0 {
		return true, nil
	}
	return conditionsMatch(c.programs, map[string]any{"object": orNil(req.Object), "oldObject": orNil(req.OldObject),
		"request": celRequest(req)})
}

// conditionCache holds the webhooks' compiled matchConditions by their
// configuration's uid, for its generation, by the webhook's index.
type conditionCache struct {
	mu       sync.Mutex
	compiled map[types.UID]*configConditions
}

type configConditions struct {
	generation int64
	webhooks   map[int]*webhookConditions
}

// get is the compiled matchConditions of the i-th webhook of config.
func (c *conditionCache) get(config *metav1.ObjectMeta, i int, mcs []admissionregistrationv1.MatchCondition) *webhookConditions {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.compiled[config.UID]
	if cc == nil || cc.generation != config.Generation {
		cc = &configConditions{generation: config.Generation, webhooks: map[int]*webhookConditions{}}
		if c.compiled == nil {
			c.compiled = map[types.UID]*configConditions{}
		}
		c.compiled[config.UID] = cc
	}
	if wc := cc.webhooks[i]; wc != nil {
		return wc
	}
	comp := compiler{env: webhookEnv}
	wc := &webhookConditions{programs: comp.conditions(mcs)}
	wc.err = comp.err
	cc.webhooks[i] = wc
	return wc
}
