// A LOInK model's library (`loink moveit-library MODEL`), loaded in-process: the compiled
// full-pose solve of the node (core/compiled/loink_pose.h) with the model's weights built in.
#pragma once

#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "loink_model.h"
}

namespace loink_kinematics
{
class ModelLibrary
{
public:
  // The model (a shipped name such as "panda_full", found in loink_ros's share/models, or a
  // path to a model .json) and its library: `library` if given, else the one
  // `loink moveit-library` writes for this model file. nullptr, with `error` one line naming
  // the file and the command that fixes it, when either is missing, stale or unreadable.
  static std::unique_ptr<ModelLibrary> open(const std::string& model, const std::string& library,
                                            std::string& error);
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary&) = delete;
  ModelLibrary& operator=(const ModelLibrary&) = delete;

  const loink_model_data& data() const { return *data_; }
  std::vector<std::string> jointNames() const;
  const std::string& path() const { return path_; }

  // loink_pose_ranked with the model's own settings.
  int solve(const loink_pose_request& request, loink_accept accept, void* context, double* q_out, double* info,
            int* tried) const;

  // Where `loink moveit-library` puts the library of a model file.
  static std::string defaultPath(const std::string& model_json, std::string& error);
  // The model file a name or path means, or "" (error set).
  static std::string modelFile(const std::string& model, std::string& error);
  // CRC-32 and size of a file, as compiled/model_library.identity() writes them, or "".
  static std::string identity(const std::string& file);
  // CRC-32 of this CPU's description, as compiled/build.cpu_key() writes it: machines that
  // share a home keep a library each.
  static std::string cpuKey();

private:
  ModelLibrary() = default;
  void* handle_{ nullptr };
  const loink_model_data* data_{ nullptr };
  decltype(&loink_pose_ranked) ranked_{ nullptr };
  std::string path_;
};
}  // namespace loink_kinematics
