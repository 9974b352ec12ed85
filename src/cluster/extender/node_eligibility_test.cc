#include "src/cluster/extender/node_eligibility.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// A node "n1" labelled zone=a, gpus=4, name=n1.
NodeTraits Labelled() {
  return {.labels = {
              {"zone", "a"}, {"gpus", "4"}, {"kubernetes.io/hostname", "n1"}}};
}

json PodWithSpec(json spec) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
          {"spec", std::move(spec)}};
}

json Required(json terms) {
  return {{"affinity",
           {{"nodeAffinity",
             {{"requiredDuringSchedulingIgnoredDuringExecution",
               {{"nodeSelectorTerms", std::move(terms)}}}}}}}};
}

json Expr(const std::string& key, const std::string& op,
          std::vector<std::string> values = {}) {
  json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

json Term(std::vector<json> exprs, std::vector<json> fields = {}) {
  json t = json::object();
  if (!exprs.empty()) t["matchExpressions"] = exprs;
  if (!fields.empty()) t["matchFields"] = fields;
  return t;
}

struct AffinityCase {
  std::string name;
  json terms;
  bool eligible;
};

TEST(NodeEligibilityTest, RequiredNodeAffinity) {
  const std::vector<AffinityCase> cases = {
      {"In matches", json::array({Term({Expr("zone", "In", {"b", "a"})})}),
       true},
      {"In other value", json::array({Term({Expr("zone", "In", {"b"})})}),
       false},
      {"In missing label", json::array({Term({Expr("rack", "In", {"a"})})}),
       false},
      {"In no values (invalid)", json::array({Term({Expr("zone", "In")})}),
       false},
      {"NotIn other value", json::array({Term({Expr("zone", "NotIn", {"b"})})}),
       true},
      {"NotIn same value", json::array({Term({Expr("zone", "NotIn", {"a"})})}),
       false},
      {"NotIn missing label",
       json::array({Term({Expr("rack", "NotIn", {"a"})})}), true},
      {"NotIn no values (invalid)",
       json::array({Term({Expr("rack", "NotIn")})}), false},
      {"Exists", json::array({Term({Expr("zone", "Exists")})}), true},
      {"Exists missing", json::array({Term({Expr("rack", "Exists")})}), false},
      {"Exists with values (invalid)",
       json::array({Term({Expr("zone", "Exists", {"a"})})}), false},
      {"DoesNotExist", json::array({Term({Expr("rack", "DoesNotExist")})}),
       true},
      {"DoesNotExist present",
       json::array({Term({Expr("zone", "DoesNotExist")})}), false},
      {"Gt", json::array({Term({Expr("gpus", "Gt", {"3"})})}), true},
      {"Gt equal", json::array({Term({Expr("gpus", "Gt", {"4"})})}), false},
      {"Gt signed", json::array({Term({Expr("gpus", "Gt", {"+3"})})}), true},
      {"Gt negative", json::array({Term({Expr("gpus", "Gt", {"-10"})})}), true},
      {"Lt", json::array({Term({Expr("gpus", "Lt", {"5"})})}), true},
      {"Lt equal", json::array({Term({Expr("gpus", "Lt", {"4"})})}), false},
      {"Gt label not a number",
       json::array({Term({Expr("zone", "Gt", {"1"})})}), false},
      {"Gt missing label", json::array({Term({Expr("rack", "Gt", {"1"})})}),
       false},
      {"Gt value not a number (invalid)",
       json::array({Term({Expr("gpus", "Gt", {"3x"})})}), false},
      {"Gt value with space (invalid)",
       json::array({Term({Expr("gpus", "Gt", {" 3"})})}), false},
      {"Gt two values (invalid)",
       json::array({Term({Expr("gpus", "Gt", {"1", "2"})})}), false},
      {"unknown operator", json::array({Term({Expr("zone", "Equals", {"a"})})}),
       false},
      {"AND within a term",
       json::array(
           {Term({Expr("zone", "In", {"a"}), Expr("gpus", "Gt", {"8"})})}),
       false},
      {"AND all match",
       json::array(
           {Term({Expr("zone", "In", {"a"}), Expr("gpus", "Lt", {"8"})})}),
       true},
      {"OR across terms",
       json::array({Term({Expr("zone", "In", {"b"})}),
                    Term({Expr("gpus", "Gt", {"1"})})}),
       true},
      {"an invalid term does not spoil another",
       json::array(
           {Term({Expr("zone", "Bogus")}), Term({Expr("zone", "Exists")})}),
       true},
      {"an invalid requirement fails a term that would match",
       json::array({Term({Expr("zone", "Exists"), Expr("rack", "NotIn")})}),
       false},
      {"no terms", json::array(), false},
      {"an empty term matches nothing", json::array({json::object()}), false},
      {"empty lists match nothing",
       json::array({{{"matchExpressions", json::array()},
                     {"matchFields", json::array()}}}),
       false},
      {"field In name",
       json::array({Term({}, {Expr("metadata.name", "In", {"n1"})})}), true},
      {"field In other",
       json::array({Term({}, {Expr("metadata.name", "In", {"n2"})})}), false},
      {"field NotIn other",
       json::array({Term({}, {Expr("metadata.name", "NotIn", {"n2"})})}), true},
      {"field NotIn name",
       json::array({Term({}, {Expr("metadata.name", "NotIn", {"n1"})})}),
       false},
      {"field two values (invalid)",
       json::array({Term({}, {Expr("metadata.name", "In", {"n1", "n2"})})}),
       false},
      {"field Exists (invalid)",
       json::array({Term({}, {Expr("metadata.name", "Exists")})}), false},
      {"other field (invalid)",
       json::array({Term({}, {Expr("metadata.uid", "In", {"n1"})})}), false},
      {"labels and fields ANDed",
       json::array({Term({Expr("zone", "In", {"a"})},
                         {Expr("metadata.name", "In", {"n2"})})}),
       false},
      {"label key not a string",
       json::array({Term({{{"key", 1}, {"operator", "Exists"}}})}), false},
  };
  for (const AffinityCase& c : cases) {
    const Eligibility e =
        CheckNodeEligibility(PodWithSpec(Required(c.terms)), "n1", Labelled());
    EXPECT_EQ(e.eligible, c.eligible) << c.name << ": " << e.reason;
    if (!e.eligible) {
      EXPECT_THAT(e.reason, HasSubstr("node n1 matches none of the pod's "
                                      "required node affinity terms"))
          << c.name;
    }
  }
}

TEST(NodeEligibilityTest, AffinityReasonNamesKeysNotValues) {
  const json terms =
      json::array({Term({Expr("zone", "In", {"secret-zone"})}),
                   Term({}, {Expr("metadata.name", "In", {"n7"})})});
  const Eligibility e =
      CheckNodeEligibility(PodWithSpec(Required(terms)), "n1", Labelled());
  ASSERT_FALSE(e.eligible);
  EXPECT_THAT(e.reason,
              HasSubstr("term 0: label zone; term 1: field metadata.name"));
  EXPECT_THAT(e.reason, Not(HasSubstr("secret-zone")));
  EXPECT_THAT(e.reason, Not(HasSubstr("n7")));
}

TEST(NodeEligibilityTest, AffinityReasonNamesAtMostThreeTerms) {
  json terms = json::array();
  for (int i = 0; i < 5; ++i) terms.push_back(Term({Expr("rack", "Exists")}));
  const Eligibility e =
      CheckNodeEligibility(PodWithSpec(Required(terms)), "n1", Labelled());
  ASSERT_FALSE(e.eligible);
  EXPECT_THAT(e.reason, HasSubstr("term 2: label rack; 2 more)"));
  EXPECT_THAT(e.reason, Not(HasSubstr("term 3")));
}

TEST(NodeEligibilityTest, AffinityWithoutTermsOrNullIsNoConstraint) {
  json spec = {{"affinity", {{"nodeAffinity", json::object()}}}};
  EXPECT_TRUE(
      CheckNodeEligibility(PodWithSpec(spec), "n1", Labelled()).eligible);
  spec = {{"affinity",
           {{"nodeAffinity",
             {{"requiredDuringSchedulingIgnoredDuringExecution", nullptr}}}}}};
  EXPECT_TRUE(
      CheckNodeEligibility(PodWithSpec(spec), "n1", Labelled()).eligible);
  // Present but without nodeSelectorTerms: nothing matches.
  spec = {{"affinity",
           {{"nodeAffinity",
             {{"requiredDuringSchedulingIgnoredDuringExecution",
               json::object()}}}}}};
  EXPECT_FALSE(
      CheckNodeEligibility(PodWithSpec(spec), "n1", Labelled()).eligible);
}

TEST(NodeEligibilityTest, NodeSelector) {
  struct Case {
    json selector;
    bool eligible;
  };
  const std::vector<Case> cases = {
      {json::object(), true},
      {{{"zone", "a"}}, true},
      {{{"zone", "a"}, {"gpus", "4"}}, true},
      {{{"zone", "b"}}, false},
      {{{"zone", "a"}, {"rack", "r1"}}, false},
      {{{"zone", ""}}, false},
      {{{"zone", 1}}, false},
  };
  for (const Case& c : cases) {
    const Eligibility e = CheckNodeEligibility(
        PodWithSpec({{"nodeSelector", c.selector}}), "n1", Labelled());
    EXPECT_EQ(e.eligible, c.eligible) << c.selector.dump() << ": " << e.reason;
  }
  const Eligibility e = CheckNodeEligibility(
      PodWithSpec({{"nodeSelector", {{"rack", "secret-rack"}}}}), "n1",
      Labelled());
  EXPECT_EQ(e.reason,
            "node n1 does not match the pod's spec.nodeSelector (label rack)");
  // Selector and affinity must both admit the node.
  json spec = Required(json::array({Term({Expr("zone", "Exists")})}));
  spec["nodeSelector"] = {{"zone", "b"}};
  EXPECT_FALSE(
      CheckNodeEligibility(PodWithSpec(spec), "n1", Labelled()).eligible);
  spec["nodeSelector"] = {{"zone", "a"}};
  EXPECT_TRUE(
      CheckNodeEligibility(PodWithSpec(spec), "n1", Labelled()).eligible);
}

json Tol(const std::string& key, const std::string& op,
         const std::string& value, const std::string& effect) {
  json t = json::object();
  if (!key.empty()) t["key"] = key;
  if (!op.empty()) t["operator"] = op;
  if (!value.empty()) t["value"] = value;
  if (!effect.empty()) t["effect"] = effect;
  return t;
}

TEST(NodeEligibilityTest, Taints) {
  struct Case {
    std::string name;
    std::vector<Taint> taints;
    json tolerations;
    bool eligible;
  };
  const Taint gpu{.key = "gpu", .value = "yes", .effect = "NoSchedule"};
  const Taint evict{.key = "gpu", .value = "yes", .effect = "NoExecute"};
  const Taint prefer{
      .key = "gpu", .value = "yes", .effect = "PreferNoSchedule"};
  const std::vector<Case> cases = {
      {"no taints", {}, json::array(), true},
      {"NoSchedule untolerated", {gpu}, json::array(), false},
      {"NoExecute untolerated", {evict}, json::array(), false},
      {"PreferNoSchedule never filters", {prefer}, json::array(), true},
      {"Equal same value",
       {gpu},
       json::array({Tol("gpu", "Equal", "yes", "NoSchedule")}),
       true},
      {"empty operator is Equal",
       {gpu},
       json::array({Tol("gpu", "", "yes", "NoSchedule")}),
       true},
      {"Equal other value",
       {gpu},
       json::array({Tol("gpu", "Equal", "no", "NoSchedule")}),
       false},
      {"Equal empty value",
       {gpu},
       json::array({Tol("gpu", "Equal", "", "NoSchedule")}),
       false},
      {"Exists ignores the value",
       {gpu},
       json::array({Tol("gpu", "Exists", "", "NoSchedule")}),
       true},
      {"other key", {gpu}, json::array({Tol("cpu", "Exists", "", "")}), false},
      {"other effect",
       {gpu},
       json::array({Tol("gpu", "Exists", "", "NoExecute")}),
       false},
      {"empty effect matches all",
       {gpu, evict},
       json::array({Tol("gpu", "Exists", "", "")}),
       true},
      {"empty key Exists tolerates everything",
       {gpu, evict, {.key = "x", .effect = "NoSchedule"}},
       json::array({Tol("", "Exists", "", "")}),
       true},
      {"empty key Equal needs the value",
       {gpu, {.key = "x", .effect = "NoSchedule"}},
       json::array({Tol("", "Equal", "yes", "")}),
       false},
      {"one of two taints untolerated",
       {gpu, {.key = "x", .effect = "NoExecute"}},
       json::array({Tol("gpu", "Exists", "", "")}),
       false},
      {"unknown operator",
       {gpu},
       json::array({Tol("gpu", "Gt", "yes", "")}),
       false},
      {"tolerations unreadable", {}, json::object(), false},
  };
  for (const Case& c : cases) {
    const Eligibility e =
        CheckNodeEligibility(PodWithSpec({{"tolerations", c.tolerations}}),
                             "n1", {.taints = c.taints});
    EXPECT_EQ(e.eligible, c.eligible) << c.name << ": " << e.reason;
  }
  const Eligibility e = CheckNodeEligibility(PodWithSpec(json::object()), "n1",
                                             {.taints = {prefer, evict}});
  EXPECT_EQ(
      e.reason,
      "node n1 has the taint gpu:NoExecute, which the pod does not tolerate");
}

TEST(NodeEligibilityTest, Unschedulable) {
  const NodeTraits cordoned{.unschedulable = true};
  struct Case {
    json tolerations;
    bool eligible;
  };
  const std::vector<Case> cases = {
      {json::array(), false},
      {json::array({Tol("node.kubernetes.io/unschedulable", "Exists", "",
                        "NoSchedule")}),
       true},
      {json::array({Tol("node.kubernetes.io/unschedulable", "Exists", "", "")}),
       true},
      {json::array({Tol("node.kubernetes.io/unschedulable", "", "", "")}),
       true},
      {json::array({Tol("", "Exists", "", "")}), true},
      {json::array({Tol("node.kubernetes.io/unschedulable", "Exists", "",
                        "NoExecute")}),
       false},
      {json::array(
           {Tol("node.kubernetes.io/unschedulable", "Equal", "true", "")}),
       false},
  };
  for (const Case& c : cases) {
    const Eligibility e = CheckNodeEligibility(
        PodWithSpec({{"tolerations", c.tolerations}}), "n1", cordoned);
    EXPECT_EQ(e.eligible, c.eligible)
        << c.tolerations.dump() << ": " << e.reason;
  }
  EXPECT_THAT(
      CheckNodeEligibility(PodWithSpec(json::object()), "n1", cordoned).reason,
      HasSubstr("node n1 is unschedulable"));
  EXPECT_TRUE(CheckNodeEligibility(json::object(), "n1", {}).eligible);
}

TEST(NodeEligibilityTest, ReadNodeTraits) {
  const json node = {
      {"metadata", {{"name", "n1"}, {"labels", {{"zone", "a"}}}}},
      {"spec",
       {{"unschedulable", true},
        {"taints",
         json::array(
             {{{"key", "gpu"}, {"effect", "NoSchedule"}},
              {{"key", "x"}, {"value", "1"}, {"effect", "NoExecute"}}})}}}};
  absl::StatusOr<NodeTraits> t = ReadNodeTraits(node);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->labels.at("zone"), "a");
  EXPECT_TRUE(t->unschedulable);
  ASSERT_EQ(t->taints.size(), 2u);
  EXPECT_EQ(t->taints[0].key, "gpu");
  EXPECT_EQ(t->taints[0].value, "");
  EXPECT_EQ(t->taints[1].value, "1");
  EXPECT_EQ(t->taints[1].effect, "NoExecute");

  t = ReadNodeTraits({{"metadata", {{"name", "n1"}}}});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->labels.empty() && t->taints.empty() && !t->unschedulable);

  EXPECT_THAT(ReadNodeTraits({{"spec", {{"taints", json::array({1})}}}})
                  .status()
                  .message(),
              HasSubstr("spec.taints[0]"));
  EXPECT_THAT(ReadNodeTraits({{"metadata", {{"labels", {{"a", 1}}}}}})
                  .status()
                  .message(),
              HasSubstr("metadata.labels[a]"));
  EXPECT_FALSE(ReadNodeTraits({{"spec", {{"unschedulable", "yes"}}}}).ok());
}

}  // namespace
}  // namespace gpulet::extender
