# The sources the decoders of outside input need (messages, configs, checkpoints, datasets,
# manifests), and nothing that needs OpenMP, BLAS or CUDA. Two builds use this one list:
#   the core (fedpar_core_decoders, the part of fedpar_core that these files are), and
#   fuzz/, whose harnesses link these files alone: libFuzzer's build instruments them, and the
#   ordinary build's corpus replays (fuzz_replay_NAME) link against them too, so a decoder that
#   comes to call a core file not listed here fails to link in every build, not only the fuzz one.
# Paths are relative to the project root.
set(FEDPAR_DECODER_CORE_SOURCES
  core/adaptive_clip.cc
  core/attack.cc
  core/checkpoint.cc
  core/codec/casts.cc
  core/codec/codec.cc
  core/codec/powersgd.cc
  core/codec/qsgd.cc
  core/codec/randk.cc
  core/codec/sign.cc
  core/codec/topk.cc
  core/config.cc
  core/crc32c.cc
  core/csv_dataset.cc
  core/fedopt.cc
  core/hash.cc
  core/idx.cc
  core/lr_schedule.cc
  core/model_data_config.cc
  core/network.cc
  core/optimizer_config.cc
  core/params.cc
  core/partition_params.cc
  core/pipeline_schedule.cc
  core/precision.cc
  core/rng.cc
  core/robust_aggregate.cc
  core/run_spec.cc
  core/safetensors.cc
  core/shared_link.cc
  core/spelling.cc
  core/unread_settings.cc
  core/weighted_average.cc)
# above the core: the wire protocol and the partition manifest
set(FEDPAR_DECODER_UPPER_SOURCES
  partitioners/manifest.cc
  protocol/frames.cc
  protocol/header.cc
  protocol/messages.cc)
