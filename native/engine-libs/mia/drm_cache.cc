// The DRM dumb buffer behind a Mia store's row cache (drm_cache.h). The ioctl structures are
// the kernel's DRM UAPI (include/uapi/drm/drm.h, drm_mode.h), written out here because the
// build machines need not carry the kernel headers; where they do, the layouts and request
// numbers are checked against them at compile time.
#include "engine-libs/mia/drm_cache.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#if __has_include(<drm/drm_mode.h>)
#include <drm/drm.h>
#include <drm/drm_mode.h>
#define SPARK_HAVE_DRM_UAPI 1
#endif

namespace spark::engines {
namespace {

struct DrmGetCap {
  uint64_t capability;
  uint64_t value;
};
struct DrmCreateDumb {
  uint32_t height;
  uint32_t width;
  uint32_t bpp;
  uint32_t flags;
  uint32_t handle;  // out
  uint32_t pitch;   // out
  uint64_t size;    // out
};
struct DrmMapDumb {
  uint32_t handle;
  uint32_t pad;
  uint64_t offset;  // out: the fake offset to mmap the device at
};
struct DrmDestroyDumb {
  uint32_t handle;
};

constexpr unsigned kDrmBase = 'd';
constexpr unsigned long kGetCap = _IOWR(kDrmBase, 0x0c, DrmGetCap);
constexpr unsigned long kCreateDumb = _IOWR(kDrmBase, 0xB2, DrmCreateDumb);
constexpr unsigned long kMapDumb = _IOWR(kDrmBase, 0xB3, DrmMapDumb);
constexpr unsigned long kDestroyDumb = _IOWR(kDrmBase, 0xB4, DrmDestroyDumb);
constexpr uint64_t kCapDumbBuffer = 1;
constexpr unsigned kDrmMajor = 226;
// One line of the buffer: 4096 pixels of 32 bits; the buffer is a whole number of 1024 lines.
constexpr uint32_t kWidth = 4096;
constexpr uint32_t kBpp = 32;
constexpr uint64_t kPitch = uint64_t{kWidth} * kBpp / 8;
constexpr uint64_t kGranule = kPitch * 1024;  // 16 MiB

static_assert(kGetCap == 0xC010640CUL && kCreateDumb == 0xC02064B2UL && kMapDumb == 0xC01064B3UL &&
                  kDestroyDumb == 0xC00464B4UL,
              "DRM ioctl numbers");
#ifdef SPARK_HAVE_DRM_UAPI
static_assert(kGetCap == DRM_IOCTL_GET_CAP && kCreateDumb == DRM_IOCTL_MODE_CREATE_DUMB &&
              kMapDumb == DRM_IOCTL_MODE_MAP_DUMB && kDestroyDumb == DRM_IOCTL_MODE_DESTROY_DUMB &&
              kCapDumbBuffer == DRM_CAP_DUMB_BUFFER);
static_assert(sizeof(DrmCreateDumb) == sizeof(drm_mode_create_dumb) && sizeof(DrmMapDumb) == sizeof(drm_mode_map_dumb));
#endif

std::mutex g_mu;
char g_node[256];
uint64_t g_bytes = 0;

int Ioctl(int fd, unsigned long request, void* arg) {
  int r;
  do r = ioctl(fd, request, arg);
  while (r != 0 && (errno == EINTR || errno == EAGAIN));
  return r;
}

}  // namespace

void SetNextCacheOnDrm(const char* node, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::snprintf(g_node, sizeof g_node, "%s", node != nullptr ? node : "");
  g_bytes = bytes;
}

DrmRowMemory::~DrmRowMemory() {
  if (data_ != nullptr) munmap(data_, bytes_);
  if (fd_ >= 0) {
    if (handle_ != 0) {
      DrmDestroyDumb d{handle_};
      Ioctl(fd_, kDestroyDumb, &d);
    }
    close(fd_);
  }
}

bool DrmRowMemory::TakeFor(uint64_t need, const char* prefix) {
  std::string node;
  uint64_t bytes;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    node = g_node;
    bytes = g_bytes;
    g_bytes = 0;  // one store only, whatever happens below
  }
  if (bytes == 0 || need == 0 || data_ != nullptr) return false;
  auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "%s: row cache in ordinary memory, not a DRM dumb buffer on %s: %s\n", prefix,
                 node.empty() ? "(no node)" : node.c_str(), why.c_str());
    return false;
  };
  if (node.empty()) return refuse("no device node given");
  // The buffer's height is a uint32 of lines; the largest a driver could be asked for.
  constexpr uint64_t kLargest = kGranule * (UINT32_MAX / 1024);
  if (bytes > kLargest)
    return refuse(std::to_string(bytes) + " bytes is more than a dumb buffer can hold (" + std::to_string(kLargest) +
                  ")");
  if (bytes % kGranule != 0) return refuse(std::to_string(bytes) + " bytes is not a whole number of 16 MiB");
  if (need > bytes)
    return refuse("the cache's " + std::to_string(need) + " row bytes do not fit in " + std::to_string(bytes));
  // What the node is, before it is opened: never an ioctl to a device of another driver.
  struct stat st;
  if (stat(node.c_str(), &st) != 0) return refuse(std::string("stat: ") + std::strerror(errno));
  if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != kDrmMajor) {
    return refuse(S_ISCHR(st.st_mode) ? "character device " + std::to_string(major(st.st_rdev)) + ":" +
                                            std::to_string(minor(st.st_rdev)) + " is not a DRM device (major 226)"
                                      : "not a character device");
  }
  fd_ = open(node.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd_ < 0) return refuse(std::string("open: ") + std::strerror(errno));
  struct stat fst;
  DrmGetCap cap{kCapDumbBuffer, 0};
  DrmCreateDumb create{static_cast<uint32_t>(bytes / kPitch), kWidth, kBpp, 0, 0, 0, 0};
  DrmMapDumb map{0, 0, 0};
  std::string why;
  if (fstat(fd_, &fst) != 0 || !S_ISCHR(fst.st_mode) || fst.st_rdev != st.st_rdev) {
    why = "the node changed while it was opened";
  } else if (Ioctl(fd_, kGetCap, &cap) != 0) {
    why = std::string("DRM_IOCTL_GET_CAP: ") + std::strerror(errno);
  } else if (cap.value == 0) {
    why = "the driver has no dumb buffers (nvidia-drm needs modeset=1)";
  } else if (Ioctl(fd_, kCreateDumb, &create) != 0) {
    why = std::string("DRM_IOCTL_MODE_CREATE_DUMB: ") + std::strerror(errno);
  } else if ((handle_ = create.handle, create.size != bytes)) {
    why = "the driver made a buffer of " + std::to_string(create.size) + " bytes, not " + std::to_string(bytes);
  } else if (map.handle = handle_, Ioctl(fd_, kMapDumb, &map) != 0) {
    why = std::string("DRM_IOCTL_MODE_MAP_DUMB: ") + std::strerror(errno);
  } else {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(map.offset));
    if (p == MAP_FAILED) {
      why = std::string("mmap: ") + std::strerror(errno);
    } else {
      data_ = static_cast<uint8_t*>(p);
      bytes_ = bytes;
      std::fprintf(stderr, "%s: row cache of %llu bytes in a DRM dumb buffer on %s\n", prefix,
                   static_cast<unsigned long long>(need), node.c_str());
      return true;
    }
  }
  if (handle_ != 0) {
    DrmDestroyDumb d{handle_};
    Ioctl(fd_, kDestroyDumb, &d);
    handle_ = 0;
  }
  close(fd_);
  fd_ = -1;
  return refuse(why);
}

}  // namespace spark::engines
