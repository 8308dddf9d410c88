import json, pathlib, sys
sys.path.insert(0, "bench")
import zoo
out = pathlib.Path(sys.argv[1])
gs = [
    zoo.one_op("softmax_512x65536_f16", "softmax", "f16", [512, 65536]),
    zoo.one_op("softmax_64x256000_bf16", "softmax", "bf16", [64, 256000]),
    zoo.one_op("log_softmax_1024x49152_bf16", "log_softmax", "bf16", [1024, 49152]),
    zoo.one_op("softmax_2000x30522_f32", "softmax", "f32", [2000, 30522]),
    zoo.norm("layer_norm_16x200000_bf16", "layer_norm", "bf16", [16, 200000]),
    zoo.norm("rms_norm_96x131072_f16", "rms_norm", "f16", [96, 131072]),
    zoo.cross_entropy("xent_4096x32000_bf16", "bf16", 4096, 32000),
    zoo.one_op("softmax_300x100003_bf16", "softmax", "bf16", [300, 100003]),
]
for g in gs:
    (out / f"{g['name'] if 'name' in g else g.name}.json").write_text(json.dumps(g, indent=1) + "\n")
