// edgebench-events-render: what an Argo Events Sensor does with one event, computed by Argo Events' own code
// (github.com/argoproj/argo-events v1.9.11), offline. tests/host/test_events.py runs it on sample payloads.
//
//	edgebench-events-render --sensor SENSOR.yaml --dependency NAME --data EVENT-DATA.json
//
// The Sensor file is decoded strictly into the v1alpha1.Sensor type (an unknown field is an error). The event data
// (what the EventSource dispatches, e.g. the resource EventSource's {type, body, oldBody, ...}) becomes an event of
// the named dependency; the dependency's filters run (dependencies.Filter: data, exprs, script, ...), and for every
// trigger whose conditions this event alone satisfies, the argoWorkflow source resource is fetched and the trigger's
// parameters are applied (triggers.FetchKubernetesResource, triggers.ApplyResourceParameters): the Workflow the
// sensor would submit. Output: JSON {"passed": bool, "reason": string, "workflows": {trigger name: object}}.
// Exit code 0 when rendered or filtered out, 2 on bad input.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/Knetic/govaluate"
	"github.com/argoproj/argo-events/pkg/apis/events/v1alpha1"
	"github.com/argoproj/argo-events/pkg/sensors/dependencies"
	"github.com/argoproj/argo-events/pkg/sensors/triggers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

type result struct {
	Passed    bool                   `json:"passed"`
	Reason    string                 `json:"reason,omitempty"`
	Workflows map[string]interface{} `json:"workflows"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "edgebench-events-render: "+format+"\n", args...)
	os.Exit(2)
}

// fires reports whether a trigger's conditions hold when only `dep` has an event (no conditions: all dependencies).
func fires(trigger v1alpha1.Trigger, deps []v1alpha1.EventDependency, dep string) (bool, error) {
	cond := trigger.Template.Conditions
	if cond == "" {
		return len(deps) == 1 && deps[0].Name == dep, nil
	}
	// dependency names hold dashes: escaped for govaluate as the JetStream trigger connection does
	expr, err := govaluate.NewEvaluableExpression(strings.ReplaceAll(cond, "-", "\\-"))
	if err != nil {
		return false, err
	}
	params := map[string]interface{}{}
	for _, d := range deps {
		params[d.Name] = d.Name == dep
	}
	out, err := expr.Evaluate(params)
	if err != nil {
		return false, err
	}
	return out == true, nil
}

func main() {
	sensorPath := flag.String("sensor", "", "Sensor YAML file")
	depName := flag.String("dependency", "", "the dependency the event arrives on")
	dataPath := flag.String("data", "", "the event data as JSON (what the EventSource dispatches)")
	flag.Parse()
	if *sensorPath == "" || *depName == "" || *dataPath == "" {
		fail("usage: --sensor FILE --dependency NAME --data FILE")
	}
	raw, err := os.ReadFile(*sensorPath)
	if err != nil {
		fail("%v", err)
	}
	var sensor v1alpha1.Sensor
	if err := yaml.UnmarshalStrict(raw, &sensor); err != nil {
		fail("%s: %v", *sensorPath, err)
	}
	data, err := os.ReadFile(*dataPath)
	if err != nil {
		fail("%v", err)
	}
	if !json.Valid(data) {
		fail("%s: event data is not JSON", *dataPath)
	}
	var dep *v1alpha1.EventDependency
	for i := range sensor.Spec.Dependencies {
		if sensor.Spec.Dependencies[i].Name == *depName {
			dep = &sensor.Spec.Dependencies[i]
		}
	}
	if dep == nil {
		fail("sensor %s has no dependency %q", sensor.Name, *depName)
	}
	event := &v1alpha1.Event{
		Context: &v1alpha1.EventContext{
			ID: "render", Source: dep.EventSourceName, Subject: dep.EventName, SpecVersion: "1.0", Type: "render",
			DataContentType: "application/json", Time: metav1.Time{Time: time.Now().UTC()},
		},
		Data: data,
	}
	out := result{Workflows: map[string]interface{}{}}
	ok, err := dependencies.Filter(event, dep.Filters, dep.FiltersLogicalOperator)
	if err != nil || !ok {
		out.Reason = "filtered out"
		if err != nil {
			out.Reason = err.Error()
		}
		emit(out)
		return
	}
	out.Passed = true
	events := map[string]*v1alpha1.Event{dep.Name: event}
	for _, trigger := range sensor.Spec.Triggers {
		if trigger.Template == nil || trigger.Template.ArgoWorkflow == nil {
			continue
		}
		yes, err := fires(trigger, sensor.Spec.Dependencies, dep.Name)
		if err != nil {
			fail("trigger %s: conditions: %v", trigger.Template.Name, err)
		}
		if !yes {
			continue
		}
		obj, err := triggers.FetchKubernetesResource(trigger.Template.ArgoWorkflow.Source)
		if err != nil {
			fail("trigger %s: %v", trigger.Template.Name, err)
		}
		if err := triggers.ApplyResourceParameters(events, trigger.Template.ArgoWorkflow.Parameters, obj); err != nil {
			out.Workflows[trigger.Template.Name] = map[string]string{"error": err.Error()}
			continue
		}
		out.Workflows[trigger.Template.Name] = obj.Object
	}
	emit(out)
}

func emit(out result) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail("%v", err)
	}
}
