// The hooks of each region kind (region_kind.h's table points at these). Internal to
// passes/fusion: everyone else reaches them through KindInfo().
#ifndef KILN_PASSES_FUSION_KINDS_H_
#define KILN_PASSES_FUSION_KINDS_H_

#include "passes/cost/cost_model.h"
#include "passes/fusion/fusion_decision.h"
#include "passes/fusion/region.h"

namespace kiln::kinds {

// kind_pointwise.cc: pointwise, layout, view.
void AnalyzeElementwise(Region& region, const DeviceSpec& device);
FusionDecision ElementwiseLegal(const Region& p, const Region& c, const Region& merged);
RunTimeEstimate PricePointwise(const Region& region, const DeviceSpec& device);
RunTimeEstimate PriceView(const Region& region, const DeviceSpec& device);

// kind_reduction.cc: row_reduction, column_reduction.
void AnalyzeReduction(Region& region, const DeviceSpec& device);
FusionDecision RowLegal(const Region& p, const Region& c, const Region& merged);
FusionDecision ColumnLegal(const Region& p, const Region& c, const Region& merged);
RunTimeEstimate PriceRow(const Region& region, const DeviceSpec& device);
RunTimeEstimate PriceColumn(const Region& region, const DeviceSpec& device);

// kind_matmul.cc.
void AnalyzeMatmulRegion(Region& region, const DeviceSpec& device);
FusionDecision MatmulLegal(const Region& p, const Region& c, const Region& merged);
RunTimeEstimate PriceMatmul(const Region& region, const DeviceSpec& device);

// kind_norm_matmul.cc.
void AnalyzeNormMatmul(Region& region, const DeviceSpec& device);
FusionDecision NormMatmulLegal(const Region& p, const Region& c, const Region& merged);
RunTimeEstimate PriceNormMatmul(const Region& region, const DeviceSpec& device);

// kind_attention.cc (its analysis, AnalyzeAttention, is attention_plan.h's).
FusionDecision AttentionLegal(const Region& p, const Region& c, const Region& merged);
RunTimeEstimate PriceAttention(const Region& region, const DeviceSpec& device);

}  // namespace kiln::kinds

#endif  // KILN_PASSES_FUSION_KINDS_H_
