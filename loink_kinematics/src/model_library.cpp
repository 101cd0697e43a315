#include "loink_kinematics/model_library.hpp"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <ament_index_cpp/get_package_share_directory.hpp>

namespace loink_kinematics
{
namespace
{
std::string fix(const std::string& model)
{
  return "run `loink moveit-library " + model + "` (docs/MOVEIT.md)";
}

// $LOINK_CACHE_DIR, else $XDG_CACHE_HOME/loink_ros, else ~/.cache/loink_ros (build.cache_dir).
std::string cacheDir()
{
  if (const char* dir = std::getenv("LOINK_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/loink_ros";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/loink_ros";
}

// build.cpu_description(): the CPU's "model name" and "flags" lines of /proc/cpuinfo, each
// once, sorted and joined by spaces; else the machine's name.
std::string cpuDescription()
{
  std::ifstream in("/proc/cpuinfo");
  if (!in)
  {
    utsname name{};
    return uname(&name) == 0 ? name.machine : "";
  }
  std::set<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0)
      lines.insert(line);
  std::string text;
  for (const std::string& line : lines)
    text += (text.empty() ? "" : " ") + line;
  return text;
}

// The library's own check of the CPU features it was built for (loink_model.h), before any
// other call into it: a library built on a CPU with instructions this one lacks (a
// workstation's AVX-512) would otherwise kill move_group with SIGILL at the first solve.
bool cpuCanRun(void* handle, const std::string& path, const std::string& model, std::string& error)
{
  const auto* features = static_cast<const char*>(dlsym(handle, "loink_cpu_features"));
  const auto missing = reinterpret_cast<decltype(&loink_cpu_missing)>(dlsym(handle, "loink_cpu_missing"));
  if (!features || !missing)
  {
    error = path + " has no CPU check (built by an older version): " + fix(model) + " --rebuild";
    return false;
  }
  std::string lacking(std::strlen(features) + 1, '\0');
  if (missing(lacking.data(), static_cast<int>(lacking.size())) == 0)
    return true;
  lacking.resize(std::strlen(lacking.c_str()));
  error = path + " was built for CPU features this CPU lacks (" + lacking +
          ") and would crash this process: rebuild it on this machine, " + fix(model);
  return false;
}
}  // namespace

std::string ModelLibrary::identity(const std::string& file)
{
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return "";
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                          static_cast<uInt>(bytes.size()));
  char text[40];
  std::snprintf(text, sizeof text, "%08lx-%zx", static_cast<unsigned long>(crc), bytes.size());
  return text;
}

std::string ModelLibrary::cpuKey()
{
  const std::string text = cpuDescription();
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(text.data()),
                          static_cast<uInt>(text.size()));
  char key[16];
  std::snprintf(key, sizeof key, "%08lx", static_cast<unsigned long>(crc));
  return key;
}

std::string ModelLibrary::modelFile(const std::string& model, std::string& error)
{
  namespace fs = std::filesystem;
  if (model.empty())
  {
    error = "no model: set loink_model (a shipped name such as panda_full, or a model .json path)";
    return "";
  }
  std::string file = model;
  if (model.size() < 5 || model.compare(model.size() - 5, 5, ".json") != 0)
  {
    try
    {
      file = ament_index_cpp::get_package_share_directory("loink_ros") + "/models/" + model + ".json";
    }
    catch (const std::exception& e)
    {
      error = "model '" + model + "': loink_ros is not installed (" + e.what() + ")";
      return "";
    }
  }
  if (!fs::is_regular_file(file))
  {
    error = "model '" + model + "': " + file + " does not exist";
    return "";
  }
  return fs::canonical(file).string();
}

std::string ModelLibrary::defaultPath(const std::string& model_json, std::string& error)
{
  const std::string id = identity(model_json);
  if (id.empty())
  {
    error = model_json + " cannot be read";
    return "";
  }
  return cacheDir() + "/moveit/" + std::filesystem::path(model_json).stem().string() + "-" + id + "-" + cpuKey() +
         ".so";
}

std::unique_ptr<ModelLibrary> ModelLibrary::open(const std::string& model, const std::string& library,
                                                 std::string& error)
{
  const std::string json = modelFile(model, error);
  if (json.empty())
    return nullptr;
  std::unique_ptr<ModelLibrary> self(new ModelLibrary());
  self->path_ = library.empty() ? defaultPath(json, error) : library;
  if (self->path_.empty())
    return nullptr;
  if (!std::filesystem::is_regular_file(self->path_))
  {
    error = "no library for " + json + " at " + self->path_ + ": " + fix(model);
    return nullptr;
  }
  self->handle_ = dlopen(self->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!self->handle_)
  {
    error = self->path_ + " cannot be loaded (" + dlerror() + "): " + fix(model) + " --rebuild";
    return nullptr;
  }
  if (!cpuCanRun(self->handle_, self->path_, model, error))
    return nullptr;
  using Data = const loink_model_data* (*)();
  const auto get = reinterpret_cast<Data>(dlsym(self->handle_, "loink_model"));
  self->ranked_ = reinterpret_cast<decltype(&loink_pose_ranked)>(dlsym(self->handle_, "loink_pose_ranked"));
  self->data_ = get ? get() : nullptr;
  if (!self->data_ || !self->ranked_ || self->data_->abi != LOINK_MODEL_ABI)
  {
    error = self->path_ + " is no model library of this plugin's version: " + fix(model) + " --rebuild";
    return nullptr;
  }
  const std::string id = identity(json);
  if (id != self->data_->identity)
  {
    error = self->path_ + " was built for another version of " + json + " (" + self->data_->identity + ", the file is " +
            id + "): " + fix(model);
    return nullptr;
  }
  return self;
}

ModelLibrary::~ModelLibrary()
{
  if (handle_)
    dlclose(handle_);
}

std::vector<std::string> ModelLibrary::jointNames() const
{
  return std::vector<std::string>(data_->joint_names, data_->joint_names + data_->n);
}

int ModelLibrary::solve(const loink_pose_request& request, loink_accept accept, void* context, double* q_out,
                        double* info, int* tried) const
{
  return ranked_(data_->ints, data_->reals, &data_->settings, &request, accept, context, q_out, info, tried);
}
}  // namespace loink_kinematics
